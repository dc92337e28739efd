# Never compiled: the golden test only generates code for it.
