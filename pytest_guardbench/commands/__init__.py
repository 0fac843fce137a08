"""The `guardbench` console commands: thin modules; the work lives in the packages below."""
