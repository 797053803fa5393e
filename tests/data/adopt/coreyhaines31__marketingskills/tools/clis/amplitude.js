// (stub: file content omitted from the test snapshot; only its path matters)
