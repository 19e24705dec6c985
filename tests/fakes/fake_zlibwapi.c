/* zlibwapi.dll, the zlib build (WINAPI calling convention) that cuDNN 8.3-8.9 on Windows imports: one of its
   exports, enough for the loader to resolve the import. */
__declspec(dllexport) const char *zlibVersion(void) { return "1.2.3"; }
