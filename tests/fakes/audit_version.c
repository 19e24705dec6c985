/* Built beside another fake (compile_library's `also`) to make it an audit library the loader takes (LD_AUDIT,
   rtld-audit(7)): la_version is the one function ld.so requires of one; it answers the loader's own version. The
   other source's constructor then runs in every process, as LD_PRELOAD's do. */
unsigned int la_version(unsigned int version) { return version; }
