package store

import "testing"

// IsExchangeRow reports whether the row of messages with the ID id is an
// instant exchange's (exchanges.go), for the package's external tests.
func IsExchangeRow(t *testing.T, s *SQLite, id int64) bool {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM messages WHERE id = ? AND reply_at IS NOT NULL`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}
