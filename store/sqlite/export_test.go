package sqlite

// Check is CheckIntegrity for the package's external tests.
var Check = CheckIntegrity
