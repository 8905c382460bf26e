package runtime

// DeclareConcurrency is declareConcurrency, for tests.
const DeclareConcurrency = declareConcurrency
