// The translation unit that builds the test suites' precompiled header (tests/CMakeLists.txt,
// tune_test_pch); the suites reuse it and nothing links this.
