"""Why a sandboxed run did not end well, as :class:`~attnkit_grader.results.Message` objects.

The templates are message ids of the grader's catalog: the student's feedback page words them in the hand-in's
language, the instructor's logs in English. The values are the limits and what the kernel said, never text the
sandbox wrote.
"""

import signal

from attnkit.i18n import N_
from attnkit_sandbox import channel

from .limits import GiB, MiB
from ..results import Message

NOT_STARTED = N_("the sandbox could not start: {detail}")
SIGNAL_REASONS = {
    signal.SIGSEGV: N_("crashed: segmentation fault (SIGSEGV)"),
    signal.SIGBUS: N_("crashed: bus error (SIGBUS)"),
    signal.SIGILL: N_("crashed: illegal instruction (SIGILL)"),
    signal.SIGFPE: N_("crashed: arithmetic error (SIGFPE)"),
    signal.SIGABRT: N_("aborted (SIGABRT), often an allocation refused under the memory limit"),
    signal.SIGXFSZ: N_("stopped: wrote a file over the size limit (SIGXFSZ)"),
}


def exit_reason(result, limits):
    """One line for a run that did not end with exit status 0 (a :class:`~attnkit_grader.results.Message`), else
    None."""
    if not result.started:
        return not_started(channel.clip_message(result.stderr.decode("utf-8", "replace")))
    if result.timed_out:
        return Message.make("stopped at the wall-clock limit of {seconds:g} s (an endless loop, or a blocked process?)",
                            seconds=float(limits.wall_seconds))
    if result.output_exceeded:
        return Message.make("stopped: wrote more than {size} to stdout/stderr outside the captured cells",
                            size=human(limits.output))
    if result.channel_exceeded:
        return Message.make("stopped: sent more than {size} of results", size=human(limits.channel))
    if result.exit_code == 0:
        return None
    if result.signal == signal.SIGXCPU:
        return Message.make("stopped at the CPU-time limit of {seconds} s (SIGXCPU)", seconds=limits.cpu_seconds)
    if result.signal == signal.SIGKILL:
        return Message.make("killed (SIGKILL): the CPU-time limit of {seconds} s (hard limit +5 s), or the machine "
                            "ran out of memory", seconds=limits.cpu_seconds)
    if result.signal in SIGNAL_REASONS:
        return Message.make(SIGNAL_REASONS[result.signal])
    if result.signal:
        try:
            name = signal.Signals(result.signal).name
        except ValueError:                     # a real-time signal has no name of its own
            name = str(result.signal)
        return Message.make("ended by signal {signal}", signal=name)
    if result.exit_code is None:
        return Message.make("ended without an exit status")
    return Message.make("the process ended with exit status {status} (os._exit?)", status=result.exit_code)


def human(nbytes):
    """A size in bytes as people read it: 2 GiB, 512 MiB, 300 bytes."""
    return f"{nbytes / GiB:g} GiB" if nbytes >= GiB else f"{nbytes / MiB:g} MiB" if nbytes >= MiB else f"{nbytes} bytes"


def not_started(detail):
    """The sandbox could not be started (``detail``: the error bwrap or the system gave)."""
    return Message.make(NOT_STARTED, detail=detail) if detail else Message.make(
        "the sandbox could not start (it said nothing)")


def out_of_memory(result, limits):
    """The cgroup killed the run, or one of its processes, for going over its memory limit."""
    template = (N_("killed: its processes together went over the memory limit of {size}") if result.exit_code
                else N_("one of its processes was killed: its processes together went over the memory limit of "
                        "{size}"))
    return Message.make(template, size=human(limits.total_memory))
