// The translation unit that builds the libraries' precompiled header (tune_lib_pch, the root
// CMakeLists.txt); it has no code of its own.
