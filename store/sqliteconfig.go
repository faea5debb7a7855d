package store

// SQLite's process-wide settings, made once before its first connection
// opens. go-sqlite3 exposes no sqlite3_config, so it is called here, in
// C: the symbol is the one go-sqlite3 compiles into the binary. (The
// same settings as compile-time options would need CGO_CFLAGS, which
// every build of the binary would have to repeat, and a second cgo build
// of SQLite.)
//
//   - Memory statistics off (SQLITE_CONFIG_MEMSTATUS). With them on,
//     SQLite takes a process-wide mutex around every malloc and free to
//     count the bytes, which every connection's thread contends for;
//     nothing here reads the counts.
//   - A larger lookaside (SQLITE_CONFIG_LOOKASIDE): 1.8 MB per
//     connection (a budget of 1,500 slots of 1,200 bytes, which SQLite
//     splits into about 1,100 such slots and 3,400 of 128 bytes) instead
//     of SQLite's 48 KB, so that the small objects a statement allocates
//     while it runs come from the connection's own slots rather than
//     malloc. The committer runs about ten statements per message, and
//     its prepared statements keep most of the default slots busy.
//     SQLite writes every slot when a connection opens, so the memory is
//     resident at once: about 11 MB for a store's six connections.
//
// BenchmarkPipeline in gateway/ ran about 8% faster with the first and
// about 9% faster again with the second; docs/performance.md, round 8.

/*
int sqlite3_config(int, ...);

// The option codes, as in sqlite3.h.
enum { sbConfigMemstatus = 9, sbConfigLookaside = 13 };

static int sbMemstatusOff(void) { return sqlite3_config(sbConfigMemstatus, 0); }
static int sbLookaside(int size, int count) { return sqlite3_config(sbConfigLookaside, size, count); }

long long sqlite3_memory_used(void);
*/
import "C"

import "fmt"

// The lookaside per connection: a budget of lookasideSlots slots of
// lookasideSize bytes.
const (
	lookasideSlots = 1500
	lookasideSize  = 1200
)

// configErr is why SQLite refused a setting, nil when it took them all.
// SQLite takes process-wide settings only before it initializes, which
// it does when the first connection opens; Open logs this error (the
// store works without the settings, only slower).
var configErr = configure()

// configure applies the settings; SQLITE_OK is 0.
func configure() error {
	if rc := C.sbMemstatusOff(); rc != 0 {
		return fmt.Errorf("store: SQLite refused to turn memory statistics off (code %d)", int(rc))
	}
	if rc := C.sbLookaside(lookasideSize, lookasideSlots); rc != 0 {
		return fmt.Errorf("store: SQLite refused the lookaside size (code %d)", int(rc))
	}
	return nil
}

// memoryUsed is SQLite's count of the bytes it has allocated: 0 while its
// memory statistics are off, whatever it holds (for tests).
func memoryUsed() int64 { return int64(C.sqlite3_memory_used()) }
