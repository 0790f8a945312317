package zdict

// DictionaryID is dictionaryID, for the tests.
var DictionaryID = dictionaryID
