/* A cuDNN sub-library of another release, as the loader meets it beside a graph library of this one (a system copy
   found by name after a lone graph library's $ORIGIN held none): it needs a symbol that the graph library it is
   loaded with does not define, so a dlopen with RTLD_NOW is refused with the loader's "undefined symbol" (seen on an
   H100: libcudnn_heuristic.so.9 of 9.14 beside libcudnn_graph.so.9 of 9.19, "undefined symbol:
   _ZTVN5cudnn7backend12OperationSetE, version libcudnn_graph.so"). NEEDED_SYMBOL names that symbol. */
#ifndef NEEDED_SYMBOL
#define NEEDED_SYMBOL cudnn_graph_symbol_of_another_release
#endif

extern int NEEDED_SYMBOL(void);

int cudnn_fake_other_release_entry(void) { return NEEDED_SYMBOL(); }
