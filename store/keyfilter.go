package store

import (
	"context"
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// Every inbound message is checked against the dedupe keys before it is
// written (appendInbound), and for almost every one the answer is "new":
// a lookup of inbound_keys that finds nothing, about a twelfth of the
// CPU of an exchange in the pipeline benchmark. keyFilter answers most of
// those without SQLite. It is a Bloom filter of every dedupe key stored:
// it may say "maybe" of a key that was never stored (then the lookup
// runs as before), but never "no" of one that was.
//
// Keys get in two ways. The committer adds each key it writes as it
// stages it (keyMessage), from the moment the store opens, before the
// key can reach the table; a key whose transaction rolls back stays in,
// which costs a lookup, not a wrong answer. Keys stored before the store
// opened — by earlier runs, and by Open's own relink — are read from
// inbound_keys by loadKeys, in the background so that start-up does not
// grow with the history; until it has read them all (ready), every key
// is looked up. Keys are never deleted, so nothing has to be taken out.
//
// The filter is sized when the store opens, for twice the messages
// stored so far (every key belongs to a message), at least a million.
// Beyond that it fills up and says "maybe" more often: the lookups come
// back, the answers stay right. The next start sizes it afresh.

// keyFilter is the Bloom filter, blocked: a key's bits all lie in one
// block of 512 (a cache line), so adding or asking touches one line of
// memory rather than one per bit. The committer and loadKeys add to it
// concurrently; only the committer asks it.
type keyFilter struct {
	// seed picks a key's block, bitSeed its bits in the block.
	seed, bitSeed maphash.Seed
	words         []uint64 // blocks of blockWords; set bits with atomic Or
	ready         atomic.Bool
	// spared counts the lookups the filter answered (for tests).
	spared atomic.Int64
}

const (
	// keyFilterHashes is how many bits a key sets; with filterBitsPerKey
	// bits per key a full filter says "maybe" of about 1% of new keys.
	keyFilterHashes  = 7
	filterBitsPerKey = 10
	minFilterKeys    = 1 << 20
	// blockWords is a block's words: 512 bits, a key's bits each 9 bits
	// of one hash.
	blockWords = 8
)

// newKeyFilter returns a filter sized for capacity keys (at least
// minFilterKeys), not yet ready.
func newKeyFilter(capacity int64) *keyFilter {
	blocks := max(capacity, minFilterKeys) * filterBitsPerKey / (64 * blockWords)
	return &keyFilter{
		seed: maphash.MakeSeed(), bitSeed: maphash.MakeSeed(),
		words: make([]uint64, blockWords<<bits.Len64(uint64(blocks-1))),
	}
}

// positions calls fn with the word index and bit of each of k's bits,
// until fn returns false.
func (f *keyFilter) positions(k inboundKey, fn func(word int, bit uint64) bool) {
	blocks := uint64(len(f.words) / blockWords)
	base := int(maphash.Comparable(f.seed, k)&(blocks-1)) * blockWords
	h := maphash.Comparable(f.bitSeed, k)
	for range keyFilterHashes {
		p := h & 511
		h >>= 9
		if !fn(base+int(p/64), 1<<(p%64)) {
			return
		}
	}
}

// add puts k in the filter.
func (f *keyFilter) add(k inboundKey) {
	f.positions(k, func(w int, b uint64) bool {
		atomic.OrUint64(&f.words[w], b)
		return true
	})
}

// mayHave reports whether k may have been stored: false only when the
// filter is ready and k certainly was not.
func (f *keyFilter) mayHave(k inboundKey) bool {
	if !f.ready.Load() {
		return true
	}
	all := true
	f.positions(k, func(w int, b uint64) bool {
		all = atomic.LoadUint64(&f.words[w])&b != 0
		return all
	})
	if !all {
		f.spared.Add(1)
	}
	return all
}

// loadKeys adds every key of inbound_keys to the filter, then makes it
// ready. It runs beside the committer from Open until done or Close; on
// an error the filter stays not ready, and every key is looked up.
func (s *SQLite) loadKeys() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	rows, err := s.r.QueryContext(ctx, `SELECT platform, bot, chat_id, platform_msg_id FROM inbound_keys`)
	if err == nil {
		defer rows.Close()
		for rows.Next() {
			var k inboundKey
			if err = rows.Scan(&k.platform, &k.bot, &k.chat, &k.msgID); err != nil {
				break
			}
			s.keys.add(k)
		}
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			s.logger().Warn("store: could not read the stored dedupe keys; every inbound message is looked up", "err", err)
		}
		return
	}
	s.keys.ready.Store(true)
}
