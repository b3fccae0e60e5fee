"""The ways a traced copy goes: an explicit copy's direction, a unified-memory migration's, and the copies between
the host and a CUDA array, read as the explicit copies they move the same data as."""

COPY_DIRECTIONS = ("h2d", "d2h")
UM_DIRECTIONS = ("um_h2d", "um_d2h")
# a copy between the host and a CUDA array (cudaMemcpy2DToArray, cudaMemcpy3D: a texture's data) crosses the link
# from the same host memory as a copy to device memory does, and is read as one
HOST_ARRAY = {"h2a": "h2d", "a2h": "d2h"}
