package config

// dirWatcher reports changes to the entries of one directory: the names
// of the entries changed, and errors after which changes may have been
// missed (the caller should then reload to be safe). Close stops it and
// waits for its goroutines.
type dirWatcher interface {
	Names() <-chan string
	Errors() <-chan error
	Close() error
}
