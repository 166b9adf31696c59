#!/usr/bin/env python3
"""scripts/mutate-pthread.py [BUILD_DIR] - issue #17's acceptance point "each static initializer,
cancellation point, cleanup handler and key destructor has a test that fails when the feature is
broken (try it)", tried: breaks each feature in src/pthread/ in turn (a one-line change), rebuilds
the layer and tests/pt_conform in BUILD_DIR (default build-test-plain, configured with the
tests), runs every case through ursa-run at 1 and 2 VPs (20 s each; a hang counts as a failure)
and prints RED (some case failed, as it must) or GREEN (the break went unnoticed) per feature.
Each source file is restored after its run (also on an exception).  Exit status 1 if any is GREEN.
"""
import os
import subprocess
import sys

R = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(R, "build-test-plain")
cases=subprocess.run([B+"/tests/pt_conform","--list"],capture_output=True,text=True).stdout.split()
cases=[c for c in cases if c not in ("mutex_deadlock",)]   # (it ends in a deadlock report by design)
green=0
M=[
 ("mutex initializer (all-zero NORMAL)","src/pthread/sync.c","  int k = m->kind;\n","  int k = m->kind;\n  if (k == 0) return -1;\n"),
 ("recursive initializer","src/pthread/sync.c","  k &= 3;\n","  k &= 3;\n  if (k == PTHREAD_MUTEX_RECURSIVE) k = PTHREAD_MUTEX_NORMAL;\n"),
 ("errorcheck initializer","src/pthread/sync.c","  k &= 3;\n","  k &= 3;\n  if (k == PTHREAD_MUTEX_ERRORCHECK) k = PTHREAD_MUTEX_NORMAL;\n"),
 ("cond initializer","src/pthread/sync.c","  if (c->dead == UPT_DEAD) return EINVAL;\n  if (abs &&","  if (c->dead == 0) return EINVAL;\n  if (abs &&"),
 ("rwlock initializer","src/pthread/sync.c","  if (l->dead == UPT_DEAD) return EINVAL;","  if (l->dead == 0) return EINVAL;"),
 ("once init","src/pthread/sync.c","    if (v & 2) return 0;\n","    if (v == 0) return 0;\n    if (v & 2) return 0;\n"),
 ("cancel point: cond wait","src/pthread/sync.c","  st = upt_park(me, &w, clock, abs, 1);","  st = upt_park(me, &w, clock, abs, 0);"),
 ("cancel point: sem wait","src/pthread/sync.c","  st = upt_park(me, &w, clock, mode == 2 ? abs : NULL, 1);","  st = upt_park(me, &w, clock, mode == 2 ? abs : NULL, 0);"),
 ("cancel point: sem wait, one VP","src/pthread/sync.c","    me->cur_sem = s;\n","    (void)s;\n"),
 ("cancel point: join","src/pthread/thread.c","    st = upt_park(me, &w, clock, mode == 2 ? abs : NULL, 1);","    st = upt_park(me, &w, clock, mode == 2 ? abs : NULL, 0);"),
 ("cancel point: sleeps","src/pthread/thread.c","  if (upt_park(me, &w, clock, abs, 1) == UPT_W_CANCELED) upt_cancel_now(me);","  if (upt_park(me, &w, clock, abs, 0) == UPT_W_CANCELED) upt_cancel_now(me);"),
 ("cancel point: testcancel","src/pthread/thread.c","  if (me->cancel_state == PTHREAD_CANCEL_ENABLE &&\n      __atomic_load_n(&me->cancel_pending","  if (0 && me->cancel_state == PTHREAD_CANCEL_ENABLE &&\n      __atomic_load_n(&me->cancel_pending"),
 ("cleanup handlers","src/pthread/thread.c","  __pthread_unwind_buf_t *buf = me->cleanup;\n  if (buf) {","  __pthread_unwind_buf_t *buf = me->cleanup;\n  if (0 && buf) {"),
 ("key destructors","src/pthread/thread.c","      if (d == NULL) continue;\n","      if (d == NULL || 1) continue;\n"),
 ("destructor iterations","src/pthread/thread.c","  for (round = 0; again && round < PTHREAD_DESTRUCTOR_ITERATIONS; round++) {","  for (round = 0; again && round < 1; round++) {"),
]
for label,f,old,new in M:
    p=os.path.join(R,f); src=open(p).read()
    if old not in src: print(f"{label}: PATTERN NOT FOUND"); continue
    open(p,"w").write(src.replace(old,new,1))
    try:
        b=subprocess.run(["ninja","-C",B,"ursa_pthread","pt_conform"],capture_output=True,text=True)
        if b.returncode: print(f"{label}: BUILD FAILED"); continue
        failed=[]
        for c in cases:
            for o in (["-n","1"],["-n","2"]):
                try:
                    r=subprocess.run([B+"/ursa-run"]+o+["--",B+"/tests/pt_conform",c],capture_output=True,text=True,timeout=20)
                    if r.returncode!=0 or (c=="ring" and r.stdout.strip().splitlines()[-1:]!=["384"]): failed.append(f"{c}{o[1]}")
                except subprocess.TimeoutExpired:
                    failed.append(f"{c}{o[1]}(hang)")
        green += not failed
        print(f"{label}: {'RED' if failed else 'GREEN (not caught!)'} {' '.join(failed[:6])}",flush=True)
    finally:
        open(p,"w").write(src)
subprocess.run(["ninja","-C",B,"ursa_pthread","pt_conform"],capture_output=True)
sys.exit(1 if green else 0)
