"""Keep freed memory for the next array instead of handing it back to the operating system.

Every op makes new numpy arrays. For a block over 128 KB, glibc's malloc maps fresh pages from
the kernel and unmaps them on free, so each large temporary pays a page fault for every 4 KB the
first time it is written, hundreds of times per training step. Raising glibc's thresholds keeps
freed blocks in the heap, ready for the next array of the same size (PyTorch's caching allocator
does the same for its own tensors). The memory a process holds then stays near its peak.

Applied once at `import minigrad` on Linux with glibc; set MINIGRAD_KEEP_MEMORY=0 to leave malloc
as it is.
"""
import ctypes
import os
import platform

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # mallopt parameters from <malloc.h>


def keep_freed_memory():
    """Ask glibc to serve blocks up to 32 MB from the heap and to give the heap back only when
    over 512 MB of it are free. Returns True if it was applied."""
    if os.environ.get("MINIGRAD_KEEP_MEMORY", "1") == "0" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    ok = libc.mallopt(M_MMAP_THRESHOLD, 32 * 2**20)  # the largest value glibc accepts on 64-bit
    ok &= libc.mallopt(M_TRIM_THRESHOLD, 512 * 2**20)
    ok &= libc.mallopt(M_TOP_PAD, 16 * 2**20)
    return bool(ok)
