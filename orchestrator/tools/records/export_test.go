package records

// Write is write for the external tests: the stored form of a record's values, as record_add makes it.
var Write = write
