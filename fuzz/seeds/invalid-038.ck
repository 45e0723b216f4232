/// Junk after the module.
module {
}
// expected-error@+1 {{expected end of file after the module, found '}'}}
}
