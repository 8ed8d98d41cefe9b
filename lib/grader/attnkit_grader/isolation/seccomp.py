"""The grading sandbox's system-call filter, built with libseccomp (through pyseccomp) for bwrap --seccomp.

The policy: every system call is allowed except

* the DENIED calls, which fail with EPERM: debugging other processes, namespaces and mounts, the kernel
  keyring, bpf and perf, userfaultfd and io_uring (frequent kernel exploit routes), kernel modules,
  kexec, reboot, swap, process accounting and open_by_handle_at (a known container escape);
* clone with any namespace flag (CLONE_NAMESPACES) in its flags, also EPERM; threads and fork go on;
* clone3, which fails with ENOSYS: its flags sit in a struct in memory, which a classic BPF filter cannot
  read, and on ENOSYS the C library falls back to clone, whose flags the filter sees.

A system call of another ABI (i386 through int 0x80 or x32 on x86-64, arm32 on aarch64) fails with
EPERM as a whole, as libseccomp's bad-architecture action: the numbers above mean other calls there.
libseccomp keeps the system-call tables, so the same policy is exported for x86-64 and aarch64 from the
names; on both, clone's flags are its first argument (only s390 swaps them). One difference from the
hand-packed filter this replaces: libseccomp lets the number -1 through on x86-64 (a tracer's "skip this
call"; the kernel answers ENOSYS), where the hand-packed one answered EPERM.

pyseccomp is a thin ctypes binding to the system's libseccomp.so.2 (Debian's libseccomp2, which apt
itself depends on); it is imported on first use only, as it runs ldconfig to find the library
(about 10 ms); this module itself imports only errno, functools, logging, os and struct.
"""
import errno
import functools
import logging
import os
import struct

log = logging.getLogger(__name__)

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev",
    "unshare", "setns",
    "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr",
    "add_key", "request_key", "keyctl",
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "open_by_handle_at",
)
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET (CLONE_NEWTIME is clone3/unshare only)
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
# libseccomp's SCMP_ARCH_* values are the kernel's AUDIT_ARCH_* ones
ARCHITECTURES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}


def export(arch):
    """The classic-BPF program (struct sock_filter array, as bwrap --seccomp reads it) for ``arch``."""
    if arch not in ARCHITECTURES:
        raise ValueError(f"arch: no system-call filter for {arch!r}; one of {', '.join(ARCHITECTURES)}")
    import tempfile

    import pyseccomp as scmp

    eperm = scmp.ERRNO(errno.EPERM)
    rules = scmp.SyscallFilter(scmp.ALLOW)
    rules.set_attr(scmp.Attr.ACT_BADARCH, eperm)
    if ARCHITECTURES[arch] != scmp.system_arch():
        rules.add_arch(ARCHITECTURES[arch])
        rules.remove_arch(scmp.Arch.NATIVE)
    # Names are resolved on this machine and translated to ``arch`` by name inside libseccomp.
    for name in DENIED:
        rules.add_rule(eperm, name)
    rules.add_rule(scmp.ERRNO(errno.ENOSYS), "clone3")
    for bit in range(32):                     # one rule per flag: "any of these bits" has no single test
        if CLONE_NAMESPACES >> bit & 1:
            rules.add_rule(eperm, "clone", scmp.Arg(0, scmp.MASKED_EQ, 1 << bit, 1 << bit))
    with tempfile.TemporaryFile() as out:     # libseccomp 2.5 exports to a file descriptor only
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


def this_machine():
    """The kernel's architecture (os.uname), if this interpreter is 64-bit."""
    return os.uname().machine if struct.calcsize("P") == 8 else f"{os.uname().machine} (32-bit interpreter)"


@functools.lru_cache(maxsize=None)
def program():
    """:func:`export` for this machine, or None, with one warning, where there is no filter for it.

    RuntimeError where there is one but libseccomp or its binding is missing: never a silent downgrade."""
    machine = this_machine()
    if machine not in ARCHITECTURES:
        log.warning("grading sandbox: no system-call filter on %s (there is one for %s); "
                    "the other limits still apply", machine, " and ".join(ARCHITECTURES))
        return None
    try:
        return export(machine)
    except (ImportError, OSError, RuntimeError) as error:   # pyseccomp missing, or libseccomp.so.2 not found
        # Where a filter exists, grading without it would silently widen what a notebook can reach.
        raise RuntimeError(f"the sandbox's system-call filter cannot be built on {machine} ({error}); "
                           f"install Debian's libseccomp2 and `pip install pyseccomp` (make setup does both)") from error


def pipe(program):
    """The read end of a pipe holding ``program`` (whole, and closed for writing), to pass to bwrap."""
    read, write = os.pipe()
    try:
        os.write(write, program)              # about 550 bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read
