"""Read a container image without running it: a `docker save` archive, an OCI layout (a folder, or a tar of one),
or a registry over the registry HTTP API v2. Its configuration (environment, labels, platform) and what its layers
hold (Python distributions, libcudnn, libcudart, the CUDA toolkit's version.json) are facts for the rules
(rules/image.py); nothing is extracted to disk, every layer is streamed once, and every name in it is treated as
hostile (path traversal, huge members, whiteouts, links)."""
