package postgres

// FailNextCommit makes s's next commit report a failure after it took
// effect, as a connection lost while COMMIT ran does.
func FailNextCommit(s *Store) { s.commitFault.Store(true) }
