# ursa_gdb.py - gdb commands that understand ursa user-level threads (issue #7, point 2).
#
# Commands
#   info ursa-threads          one line per live ursa thread: id, name, state (running, ready,
#                              blocked, finished), VP, and what it waits on (worded as the
#                              deadlock report and ursa_dump word it).  '*' marks the thread gdb
#                              shows: the running one, or the one chosen by ursa-thread select.
#   ursa-thread bt ID|all [OPTIONS]
#                              the backtrace of ursa thread ID (or of every thread), with the usual
#                              backtrace options (full, -frame-arguments all, a frame count...).
#   ursa-thread select ID      shows thread ID in gdb: bt, frame, up/down, info locals, print
#                              work on its frames.  Its innermost frame is #1 (#0 is hidden).
#   ursa-thread restore        back to gdb's own view (also happens when the program resumes).
#
# How a parked thread is shown (live process and core file alike)
#   A thread that is not running has its registers in its descriptor: on x86-64, t->ctx.w[0..7]
#   holds RIP RSP RBX RBP R12 R13 R14 R15 (src/arch/switch_x86_64_sysv_elf_gas.S), RIP being the
#   return address of the call that switched away, RSP the stack pointer after that return.
#   Writing $rip/$rsp/... (what some fiber scripts do) works on a live process only: a core
#   file's registers are read-only.  So this script uses a Python frame unwinder (gdb.unwinder):
#   while a thread is chosen, it unwinds frame #0 of the kernel thread gdb stopped to the saved
#   registers, so frame #1 and everything older are the parked thread's, unwound by gdb's own
#   DWARF CFI unwinder from there; a frame filter hides frame #0.  Nothing in the inferior is
#   read-written or called, so it works the same on a live process and on a core file.  (The
#   same idea as Folly's fibers script; the unwinder here keys on frame level 0 of the gdb thread
#   it was armed on and gives that frame an id just below the parked stack pointer, so gdb's
#   "previous frame inner to this frame" check does not stop the walk across the stack switch.)
#   The running thread (vp->cur) is the kernel thread's own: gdb's plain bt shows it.
#
# Requirements: debug info for libursa (the default RelWithDebInfo build has -g), with the
# library linked statically into the program or as libursa.so; the x86-64 asm context switch
# (the ucontext build and AArch64 save the registers elsewhere and are not understood yet).
#
# Loading: installed as share/gdb/auto-load/<libdir>/libursa.so.<version>-gdb.py, gdb loads it
# with libursa.so (docs/GUIDE.md, Debugging: the auto-load safe-path must allow that directory).
# For a static link: (gdb) source <this file>.
import time

import gdb
import gdb.unwinder

# enum ursa__wait (src/core/internal.h) by enumerator name -> ursa__wait_name (src/core/sched.c)
_WAIT_TEXT = {
    "URSA__W_NONE": "nothing",
    "URSA__W_SEM": "ursa_sem_wait on semaphore",
    "URSA__W_MUTEX": "ursa_mutex_lock on mutex",
    "URSA__W_COND": "ursa_cond_wait on condition variable",
    "URSA__W_BARRIER": "ursa_barrier_wait on barrier",
    "URSA__W_RDLOCK": "ursa_rwlock_rdlock on rwlock",
    "URSA__W_WRLOCK": "ursa_rwlock_wrlock on rwlock",
    "URSA__W_ONCE": "ursa_once on once",
    "URSA__W_IVAR": "ursa_ivar_get on I-structure",
    "URSA__W_MVAR_TAKE": "ursa_mvar_take on M-structure",
    "URSA__W_MVAR_PUT": "ursa_mvar_put on M-structure",
    "URSA__W_JOIN": "ursa_join on thread",
    "URSA__W_SLEEP": "ursa_sleep_ns",
}
# The enums' values as of this script, used when the debug info lacks the enum types.
_WAIT_ORDER = ["URSA__W_NONE", "URSA__W_SEM", "URSA__W_MUTEX", "URSA__W_COND", "URSA__W_BARRIER",
               "URSA__W_RDLOCK", "URSA__W_WRLOCK", "URSA__W_ONCE", "URSA__W_IVAR",
               "URSA__W_MVAR_TAKE", "URSA__W_MVAR_PUT", "URSA__W_JOIN", "URSA__W_SLEEP"]
_STATE_DEFAULT = {"URSA__RUNNING": 1, "URSA__READY": 2, "URSA__BLOCKED": 3, "URSA__ZOMBIE": 4}
_STATE_TEXT = {"URSA__RUNNING": "running", "URSA__READY": "ready", "URSA__BLOCKED": "blocked",
               "URSA__ZOMBIE": "finished"}

# x86-64: the registers in t->ctx.w[0..7], in order (the table atop the .S file)
_X86_64_CTX_REGS = ["rip", "rsp", "rbx", "rbp", "r12", "r13", "r14", "r15"]
_X86_64_CTX_WORDS = 9


def _enum_values(type_name, fallback):
    """name -> value of an enum from the debug info, or fallback."""
    try:
        t = gdb.lookup_type(type_name)
        return {f.name: int(f.enumval) for f in t.fields()}
    except (gdb.error, RuntimeError):
        return dict(fallback)


def _global():
    """The runtime's struct ursa__global (ursa__g), or a GdbError saying why not."""
    try:
        g = gdb.parse_and_eval("ursa__g")
    except gdb.error:
        g = None
        sym = gdb.lookup_static_symbol("ursa__g")
        if sym is not None:
            g = sym.value()
    if g is None:
        raise gdb.GdbError("ursa: no symbol ursa__g: the program does not use ursa, libursa is not "
                           "loaded yet, or it has no debug info")
    if int(g["initialized"]) == 0:
        raise gdb.GdbError("ursa: the runtime is not initialized (ursa_init not called yet, or "
                           "ursa_fini already)")
    return g


def _threads():
    """Every live thread: struct ursa__thread * values, in handle-table order."""
    g = _global()
    slots = g["slots"]
    n = int(slots["nslots"])
    base = slots["slot"]
    out = []
    for i in range(n):
        t = (base + i).dereference()["t"]
        if int(t) != 0:
            out.append(t)
    return out


def _find(tid):
    for t in _threads():
        if int(t["id"]) == tid:
            return t
    raise gdb.GdbError("ursa: no live ursa thread with id %d (see info ursa-threads)" % tid)


def _name(t):
    try:
        return t["name"].string(length=-1)
    except (gdb.error, UnicodeDecodeError):
        return "?"


def _state(t):
    states = _enum_values("enum ursa__state", _STATE_DEFAULT)
    v = int(t["state"])
    for k, val in states.items():
        if val == v:
            return _STATE_TEXT.get(k, k)
    return "state %d" % v


def _is_live():
    try:
        conn = gdb.selected_inferior().connection
        return conn is not None and conn.type != "core" and gdb.selected_inferior().pid != 0
    except AttributeError:
        return False


def _wait_text(t):
    if _state(t) != "blocked":
        return ""
    waits = _enum_values("enum ursa__wait", {n: i for i, n in enumerate(_WAIT_ORDER)})
    kind = int(t["wait_kind"])
    kname = next((k for k, v in waits.items() if v == kind), None)
    text = _WAIT_TEXT.get(kname, "wait kind %d" % kind)
    obj = t["w"]["wait_obj"]
    if kname == "URSA__W_JOIN" and int(obj) != 0:
        target = obj.cast(t.type)
        text += " %d (%s)" % (int(target["id"]), _name(target))
    elif kname != "URSA__W_SLEEP":
        text += " " + str(obj.cast(gdb.lookup_type("void").pointer()))
    if int(t["w"]["heap_idx"]) != 0:
        deadline = int(t["deadline"])
        if _is_live():
            left = (deadline - time.clock_gettime_ns(time.CLOCK_MONOTONIC)) / 1e9
            text += ", until %.3f s from now" % left
        else:
            text += ", until CLOCK_MONOTONIC %.3f s" % (deadline / 1e9)
    return text


def _saved_regs(t):
    """The parked thread's saved registers as [(name, int)], or a GdbError."""
    arch = gdb.selected_inferior().architecture().name()
    words = t["ctx"]["w"]
    nwords = words.type.range()[1] + 1
    if arch != "i386:x86-64" or nwords != _X86_64_CTX_WORDS:
        raise gdb.GdbError("ursa: backtraces of parked threads need the x86-64 asm context switch "
                           "(this is %s, with %d context words)" % (arch, nwords))
    return [(r, int(words[i])) for i, r in enumerate(_X86_64_CTX_REGS)]


# ---- showing a parked thread: the unwinder and the frame filter ---------------------------------
class _FrameId:
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class _UrsaUnwinder(gdb.unwinder.Unwinder):
    """While armed, unwinds frame #0 of one gdb thread to a parked ursa thread's registers."""

    def __init__(self):
        super().__init__("ursa-parked-thread")
        self.regs = None    # [(register, value)] of the thread shown, or None
        self.ptid = None    # the gdb thread whose frame #0 is replaced
        self.tid = None     # the ursa thread id shown

    def __call__(self, pending_frame):
        if self.regs is None or pending_frame.level() != 0:
            return None
        th = gdb.selected_thread()
        if th is None or th.ptid != self.ptid:
            return None
        u64 = gdb.lookup_type("unsigned long")
        # Frame #0's id: just below the parked stack pointer, so the parked frames count as
        # "outer" and gdb keeps unwinding across the switch of stacks.
        sp = dict(self.regs)["rsp"] - 16
        frame_id = _FrameId(gdb.Value(sp).cast(u64), pending_frame.read_register("rip"))
        info = pending_frame.create_unwind_info(frame_id)
        for name, value in self.regs:
            info.add_saved_register(name, gdb.Value(value).cast(u64))
        return info


class _UrsaFrameFilter:
    """Hides frame #0 (the kernel thread's own frame) while a parked thread is shown."""

    def __init__(self):
        self.name = "ursa-parked-thread"
        self.priority = 100
        self.enabled = True

    def filter(self, frame_iter):
        th = gdb.selected_thread()
        if _UNWINDER.regs is None or th is None or th.ptid != _UNWINDER.ptid:
            return frame_iter
        return (f for f in frame_iter if f.inferior_frame().level() != 0)


_UNWINDER = _UrsaUnwinder()
gdb.unwinder.register_unwinder(None, _UNWINDER, replace=True)
gdb.frame_filters["ursa-parked-thread"] = _UrsaFrameFilter()


def _arm(tid, regs):
    th = gdb.selected_thread()
    if regs is not None and th is None:
        raise gdb.GdbError("ursa: no thread selected (no process or core file?)")
    _UNWINDER.regs = regs
    _UNWINDER.tid = tid
    _UNWINDER.ptid = th.ptid if regs is not None else None
    gdb.invalidate_cached_frames()


def _disarm(*_args):
    if _UNWINDER.regs is not None:
        _UNWINDER.regs = None
        _UNWINDER.tid = None
        _UNWINDER.ptid = None
        gdb.invalidate_cached_frames()


def _shown_tid():
    """The ursa thread id gdb's frames show now."""
    if _UNWINDER.regs is not None:
        return _UNWINDER.tid
    return None


# Resuming the program (or its end) makes the saved registers stale: back to gdb's own view.
gdb.events.cont.connect(_disarm)
gdb.events.exited.connect(_disarm)


def _parse_id(arg, cmd):
    words = gdb.string_to_argv(arg)
    if not words:
        raise gdb.GdbError("usage: %s ID (an id from info ursa-threads)" % cmd)
    try:
        tid = int(words[0], 0)
    except ValueError:
        raise gdb.GdbError("%s: %r is not a thread id" % (cmd, words[0]))
    return tid, words[1:]


# ---- commands ----------------------------------------------------------------------------------
class InfoUrsaThreads(gdb.Command):
    """List ursa threads: id, name, state, VP, and what each waits on.
Usage: info ursa-threads
'*' marks the thread gdb shows (the running one, or the one picked with ursa-thread select)."""

    def __init__(self):
        super().__init__("info ursa-threads", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        threads = _threads()
        shown = _shown_tid()
        rows = []
        for t in threads:
            state = _state(t)
            mark = "*" if (shown is not None and int(t["id"]) == shown) or \
                          (shown is None and state == "running") else " "
            vp = str(int(t["vp"]["index"])) if int(t["vp"]) != 0 else "-"
            rows.append((mark, str(int(t["id"])), _name(t), state, vp, _wait_text(t)))
        head = (" ", "Id", "Name", "State", "VP", "Waits on")
        widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
        for r in [head] + rows:
            line = "%s %-*s  %-*s  %-*s  %-*s  %s" % (r[0], widths[1], r[1], widths[2], r[2],
                                                       widths[3], r[3], widths[4], r[4], r[5])
            gdb.write(line.rstrip() + "\n")


class UrsaThread(gdb.Command):
    """Work with ursa threads.
ursa-thread bt ID|all [OPTIONS]  backtrace of ursa thread ID, or of every thread
ursa-thread select ID            show thread ID's frames (bt, frame, up, info locals...)
ursa-thread restore              back to gdb's own view of the kernel thread"""

    def __init__(self):
        super().__init__("ursa-thread", gdb.COMMAND_STACK, prefix=True)


class UrsaThreadBt(gdb.Command):
    """Backtrace of an ursa thread.
Usage: ursa-thread bt ID|all [backtrace options]
A parked thread's innermost frame is numbered #1.  The running thread's is gdb's own bt."""

    def __init__(self):
        super().__init__("ursa-thread bt", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        words = gdb.string_to_argv(arg)
        if words and words[0] == "all":
            opts = " ".join(words[1:])
            for t in _threads():
                self._one(t, opts)
            return
        tid, rest = _parse_id(arg, "ursa-thread bt")
        self._one(_find(tid), " ".join(rest))

    def _one(self, t, opts):
        tid, state = int(t["id"]), _state(t)
        gdb.write("ursa thread %d (%s), %s%s:\n" % (tid, _name(t), state,
                                                    (": " + _wait_text(t)) if _wait_text(t) else ""))
        prev = (_UNWINDER.tid, _UNWINDER.regs)
        try:
            level = gdb.selected_frame().level()
        except gdb.error:
            level = None
        try:
            if state == "running":
                _arm(None, None)
            else:
                _arm(tid, _saved_regs(t))
            out = gdb.execute("backtrace " + opts, to_string=True)
        finally:
            _arm(*prev)
            if level is not None:
                try:
                    f = gdb.newest_frame()
                    while f is not None and f.level() < level:
                        f = f.older()
                    if f is not None:
                        f.select()
                except gdb.error:
                    pass
        gdb.write(out)


class UrsaThreadSelect(gdb.Command):
    """Show an ursa thread's frames in gdb.
Usage: ursa-thread select ID
bt, frame N, up, down, info locals, print... then work on thread ID's frames; its innermost
frame is #1.  ursa-thread restore (or resuming the program) goes back."""

    def __init__(self):
        super().__init__("ursa-thread select", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        tid, _ = _parse_id(arg, "ursa-thread select")
        t = _find(tid)
        if _state(t) == "running":
            _disarm()
            gdb.newest_frame().select()
            gdb.write("[ursa thread %d (%s) is running: gdb's own frames]\n" % (tid, _name(t)))
        else:
            _arm(tid, _saved_regs(t))
            f = gdb.newest_frame().older()
            if f is None:
                _disarm()
                raise gdb.GdbError("ursa: cannot unwind thread %d" % tid)
            f.select()
            gdb.write("[Showing ursa thread %d (%s), %s]\n" % (tid, _name(t), _state(t)))
        gdb.execute("frame", to_string=False)


class UrsaThreadRestore(gdb.Command):
    """Go back to gdb's own view of the kernel thread after ursa-thread select."""

    def __init__(self):
        super().__init__("ursa-thread restore", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        _disarm()
        try:
            gdb.newest_frame().select()
        except gdb.error:
            return
        gdb.write("[Back to gdb's own frames]\n")
        gdb.execute("frame", to_string=False)


InfoUrsaThreads()
UrsaThread()
UrsaThreadBt()
UrsaThreadSelect()
UrsaThreadRestore()
