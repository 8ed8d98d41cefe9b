"""The libseccomp-built system-call filter (attnkit_grader.isolation.seccomp) against the hand-packed one.

The programs are run by a small classic-BPF interpreter (every instruction seccomp accepts; anything else
fails the test): on x86-64 side by side with the hand-packed filter the kit used before (``hand_built``,
a copy of attnkit.grading.sandbox.seccomp_program as it was up to commit c6d1e07, when libseccomp replaced
it), and on AArch64 with the kernel's asm-generic numbers. One test loads the x86-64
program into a child process's kernel.
"""

import errno
import logging
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

try:
    from attnkit_grader.isolation import seccomp
except ImportError:                     # run without PYTHONPATH=lib/grader
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib" / "grader"))
    from attnkit_grader.isolation import seccomp

AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64, AUDIT_ARCH_ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028
NAMESPACE_FLAGS = (0x10000000, 0x20000, 0x40000000, 0x20000000, 0x8000000, 0x4000000, 0x2000000)
EPERM, ENOSYS, ALLOW = ("errno", errno.EPERM), ("errno", errno.ENOSYS), ("allow",)
# include/uapi/asm-generic/unistd.h, which arm64 uses
AARCH64 = {
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "unshare": 97, "setns": 268,
    "mount": 40, "umount2": 39, "pivot_root": 41, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "add_key": 217, "request_key": 218, "keyctl": 219, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "init_module": 105, "finit_module": 273, "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294,
    "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89, "open_by_handle_at": 265,
}
AARCH64_CLONE, AARCH64_CLONE3 = 220, 435


def run_filter(program, nr, arch=AUDIT_ARCH_X86_64, arg0=0):
    """What the classic-BPF ``program`` answers for one system call: ("allow",), ("errno", N) or ("other", k).

    struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}, little-endian (both architectures here).
    """
    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0 & (2 ** 64 - 1), 0, 0, 0, 0, 0)
    assert len(program) % 8 == 0 and 0 < len(program) // 8 <= 4096
    code = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    alu = {0x00: lambda a, b: a + b, 0x10: lambda a, b: a - b, 0x20: lambda a, b: a * b,
           0x30: lambda a, b: a // b, 0x40: lambda a, b: a | b, 0x50: lambda a, b: a & b,
           0x60: lambda a, b: a << b if b < 32 else 0, 0x70: lambda a, b: a >> b if b < 32 else 0,
           0x90: lambda a, b: a % b, 0xA0: lambda a, b: a ^ b}
    jump = {0x10: lambda a, b: a == b, 0x20: lambda a, b: a > b, 0x30: lambda a, b: a >= b,
            0x40: lambda a, b: bool(a & b)}
    pc, a, x, mem = 0, 0, 0, [0] * 16
    while True:
        assert pc < len(code), f"ran off the end of the program at {pc}"
        op, jt, jf, k = code[pc]
        cls, size, mode, operation = op & 0x07, op & 0x18, op & 0xE0, op & 0xF0
        source = x if op & 0x08 else k                                   # BPF_X or BPF_K
        if cls in (0x00, 0x01) and size == 0x00 and mode in (0x00, 0x20, 0x60, 0x80):   # BPF_LD/LDX, W
            assert mode != 0x20 or cls == 0x00, f"LDX ABS at {pc}"
            assert mode != 0x20 or (k % 4 == 0 and k + 4 <= len(data)), f"load at offset {k}"
            assert mode != 0x60 or k < 16, f"scratch slot {k}"
            value = {0x00: lambda: k, 0x20: lambda: struct.unpack_from("<I", data, k)[0],   # IMM, ABS
                     0x60: lambda: mem[k], 0x80: lambda: len(data)}[mode]()          # MEM, LEN
            a, x = (value, x) if cls == 0x00 else (a, value)
        elif op in (0x02, 0x03):                                         # BPF_ST / BPF_STX
            assert k < 16, f"scratch slot {k}"
            mem[k] = a if op == 0x02 else x
        elif cls == 0x04 and operation in alu:                           # BPF_ALU, K or X
            assert operation not in (0x30, 0x90) or source, f"division by zero at {pc}"
            a = alu[operation](a, source) & 0xFFFFFFFF
        elif op == 0x84:                                                 # BPF_ALU | BPF_NEG
            a = -a & 0xFFFFFFFF
        elif op == 0x05:                                                 # BPF_JMP | BPF_JA
            pc += k
        elif cls == 0x05 and operation in jump:                          # BPF_JMP | JEQ/JGT/JGE/JSET, K or X
            pc += jt if jump[operation](a, source) else jf
        elif op in (0x06, 0x16):                                         # BPF_RET | K / A
            result = k if op == 0x06 else a
            return ALLOW if result == 0x7FFF0000 else ("errno", result & 0xFFFF) if result >> 16 == 5 \
                else ("other", result)
        elif op in (0x07, 0x87):                                         # BPF_MISC | TAX / TXA
            a, x = (a, a) if op == 0x07 else (x, x)
        else:
            raise AssertionError(f"opcode {op:#x} at {pc}")
        pc += 1


# arch/x86/entry/syscalls/syscall_64.tbl
X86_64 = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "unshare": 272, "setns": 308,
    "mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "add_key": 248, "request_key": 249, "keyctl": 250, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320,
    "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "open_by_handle_at": 304,
}


def hand_built():
    """The hand-packed x86-64 filter, as attnkit.grading.sandbox.seccomp_program() built it (373b81f)."""
    def bpf(code, k, jt=0, jf=0):
        return struct.pack("=HBBI", code, jt, jf, k)
    LD_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    deny, enosys, allow = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS, 0x7FFF0000
    program = [bpf(LD_ABS, 4), bpf(JEQ, AUDIT_ARCH_X86_64, jt=1), bpf(RET, deny),
               bpf(LD_ABS, 0), bpf(JGE, 0x40000000, jf=1), bpf(RET, deny)]
    for number in sorted(X86_64.values()):
        program += [bpf(JEQ, number, jf=1), bpf(RET, deny)]
    program += [bpf(JEQ, 435, jf=1), bpf(RET, enosys),
                bpf(JEQ, 56, jf=4), bpf(LD_ABS, 16), bpf(JSET, seccomp.CLONE_NAMESPACES, jf=1),
                bpf(RET, deny), bpf(RET, allow),
                bpf(RET, allow)]
    return b"".join(program)


def test_the_interpreter_fails_on_an_opcode_it_does_not_know():
    with pytest.raises(AssertionError, match="opcode 0x28"):                 # BPF_LD | BPF_H | BPF_ABS
        run_filter(struct.pack("=HBBI", 0x28, 0, 0, 0) + struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000), 0)


def test_x86_64_program_refuses_the_listed_calls_and_namespace_clones():
    program = seccomp.export("x86_64")
    assert set(seccomp.DENIED) == set(X86_64) and len(seccomp.DENIED) == len(X86_64)
    assert seccomp.CLONE_NAMESPACES == sum(NAMESPACE_FLAGS)
    for name, number in X86_64.items():
        assert run_filter(program, number) == EPERM, name
    for allowed in (0, 1, 2, 9, 39, 57, 59, 61, 161, 231, 302, 334):    # read, write, open, mmap, getpid, fork,
        assert run_filter(program, allowed) == ALLOW, allowed           # execve, wait4, chroot, exit_group, ...
    assert run_filter(program, 56, arg0=0x3D0F00) == ALLOW              # clone of a thread (glibc's flags)
    assert run_filter(program, 56, arg0=0x01200011) == ALLOW            # fork(): CHILD_SETTID|CLEARTID|SIGCHLD
    for flag in NAMESPACE_FLAGS:
        assert run_filter(program, 56, arg0=flag | 17) == EPERM, hex(flag)
    assert run_filter(program, 435) == ENOSYS                            # clone3: libc falls back to clone
    assert run_filter(program, 101, arch=AUDIT_ARCH_I386) == EPERM       # i386 ABI (int 0x80): refused whole
    assert run_filter(program, 0, arch=AUDIT_ARCH_I386) == EPERM
    assert run_filter(program, 0x40000000 + 101) == EPERM                # x32 ABI: refused whole
    assert run_filter(program, 0x40000000) == EPERM                      # x32 read


def test_x86_64_program_answers_as_the_hand_built_one():
    ours, theirs = seccomp.export("x86_64"), hand_built()
    args = (0, 17, 0x3D0F00, 0x01200011, seccomp.CLONE_NAMESPACES, 0xFFFFFFFF00000011,
            *NAMESPACE_FLAGS, *(flag | 0xFFFFFFFF00000000 for flag in NAMESPACE_FLAGS))
    cases = [(nr, AUDIT_ARCH_X86_64, arg0) for nr in range(461) for arg0 in args]
    cases += [(0x40000000 + nr, AUDIT_ARCH_X86_64, 0) for nr in (0, 1, 56, 101, 435, 512, 547)]  # x32
    cases += [(nr, arch, arg) for arch in (AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64, 0) for nr in (0, 1, 56, 120, 435)
              for arg in (0, 0x10000011)]
    answers = {}
    for nr, arch, arg0 in cases:
        answers.setdefault(run_filter(ours, nr, arch, arg0), 0)
        assert run_filter(ours, nr, arch, arg0) == run_filter(theirs, nr, arch, arg0), (nr, hex(arch), hex(arg0))
        answers[run_filter(ours, nr, arch, arg0)] += 1
    assert set(answers) == {ALLOW, EPERM, ENOSYS}                        # the sweep saw every answer


def test_x86_64_system_call_minus_one_is_the_one_difference():
    # libseccomp lets nr -1 through (ptrace's "skip this call"; the kernel answers ENOSYS); the hand-built
    # filter took it for an x32 call. Documented in the module; this test notices if either side changes.
    assert run_filter(seccomp.export("x86_64"), -1) == ALLOW
    assert run_filter(hand_built(), -1) == EPERM


def test_aarch64_program_refuses_the_same_names():
    import pyseccomp

    resolved = {name: pyseccomp.resolve_syscall(pyseccomp.Arch.AARCH64, name) for name in seccomp.DENIED}
    assert sorted(name for name, number in resolved.items() if number < 0) == []   # none missing on aarch64
    assert resolved == AARCH64                                           # libseccomp's table is the kernel's
    program = seccomp.export("aarch64")
    assert program != seccomp.export("x86_64")
    arch = AUDIT_ARCH_AARCH64
    for name, number in AARCH64.items():
        assert run_filter(program, number, arch) == EPERM, name
    for allowed in (63, 64, 56, 94, 172, 221, 260, 51):                 # read, write, openat, exit_group, getpid,
        assert run_filter(program, allowed, arch) == ALLOW, allowed     # execve, wait4, chroot
    denied = set(AARCH64.values()) | {AARCH64_CLONE3}
    for nr in range(461):
        if nr not in denied:
            assert run_filter(program, nr, arch, arg0=0x3D0F00) == ALLOW, nr
    assert run_filter(program, AARCH64_CLONE, arch, arg0=0x3D0F00) == ALLOW
    assert run_filter(program, AARCH64_CLONE, arch, arg0=0x01200011) == ALLOW
    for flag in NAMESPACE_FLAGS:
        assert run_filter(program, AARCH64_CLONE, arch, arg0=flag | 17) == EPERM, hex(flag)
    assert run_filter(program, AARCH64_CLONE3, arch) == ENOSYS
    for foreign in (AUDIT_ARCH_X86_64, AUDIT_ARCH_ARM):                 # x86_64's numbers, arm32 compat calls
        assert run_filter(program, 63, foreign) == EPERM
        assert run_filter(program, 0, foreign) == EPERM


def test_export_names_the_argument_for_another_architecture():
    for arch in ("riscv", "i386", "x86-64", None):
        with pytest.raises(ValueError, match="arch"):
            seccomp.export(arch)


def test_program_is_this_machines_and_cached(monkeypatch):
    monkeypatch.setattr(seccomp, "this_machine", lambda: "aarch64")
    seccomp.program.cache_clear()
    try:
        assert seccomp.program() == seccomp.export("aarch64") and seccomp.program() is seccomp.program()
    finally:
        seccomp.program.cache_clear()


def test_no_program_on_another_architecture_with_one_warning(monkeypatch, caplog):
    monkeypatch.setattr(seccomp, "this_machine", lambda: "riscv64")
    seccomp.program.cache_clear()
    try:
        with caplog.at_level("WARNING", logger=seccomp.__name__):
            assert seccomp.program() is None and seccomp.program() is None
    finally:
        seccomp.program.cache_clear()
    notices = [r for r in caplog.records if r.name == seccomp.__name__]
    assert len(notices) == 1 and notices[0].levelno == logging.WARNING
    assert "riscv64" in notices[0].getMessage()


def test_without_the_binding_the_grader_refuses_to_run_unfiltered(monkeypatch):
    monkeypatch.setattr(seccomp, "this_machine", lambda: "x86_64")
    monkeypatch.setitem(sys.modules, "pyseccomp", None)                  # import pyseccomp: ImportError
    seccomp.program.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="libseccomp2 and `pip install pyseccomp`"):
            seccomp.program()
    finally:
        seccomp.program.cache_clear()


def test_pipe_holds_the_program():
    program = seccomp.export("x86_64")
    read = seccomp.pipe(program)
    try:
        assert os.read(read, 65536) == program and os.read(read, 1) == b""
    finally:
        os.close(read)


@pytest.mark.skipif(os.uname().machine != "x86_64" or not sys.platform.startswith("linux"), reason="x86_64 only")
def test_the_kernel_accepts_the_program_and_refuses_as_told(tmp_path):
    (tmp_path / "filter.bpf").write_bytes(seccomp.export("x86_64"))
    child = textwrap.dedent(f"""
        import ctypes, os, sys
        libc = ctypes.CDLL(None, use_errno=True)
        code = open({str(tmp_path / "filter.bpf")!r}, "rb").read()
        class Prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
        assert libc.prctl(38, 1, 0, 0, 0) == 0                           # PR_SET_NO_NEW_PRIVS
        if libc.prctl(22, 2, ctypes.byref(Prog(len(code) // 8, code)), 0, 0) != 0:   # PR_SET_SECCOMP, FILTER
            sys.exit("prctl: " + os.strerror(ctypes.get_errno()))
        def call(*args):
            result = libc.syscall(*[ctypes.c_long(a) for a in args])
            return ctypes.get_errno() if result == -1 else 0
        print(call(272, 0x10000000), call(435, 0, 0), call(56, 0x10000011, 0, 0, 0, 0), call(165, 0, 0, 0, 0, 0),
              call(101, 0, 0, 0, 0), os.getpid() > 0)
        pid = os.fork()                                                  # clone without namespace flags
        if pid == 0:
            os._exit(7)
        print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(errno.EPERM)] * 1 + [str(errno.ENOSYS)] + [str(errno.EPERM)] * 3 \
        + ["True", "7"]
