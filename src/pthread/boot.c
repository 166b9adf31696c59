/*
 * boot.c - how libursa-pthread takes over a process, and who gets glibc instead.
 *
 * libursa-pthread.so exports the POSIX names (pthread_create, pthread_mutex_lock, sem_wait,
 * nanosleep, ...).  Loaded with LD_PRELOAD (ursa-run), or linked before libc (-lursa-pthread), it
 * comes before glibc in the dynamic linker's search order, so every call of the program and of its
 * libraries (libstdc++'s std::thread and std::mutex, libgcc's unwinder) reaches it.  It uses
 * ursa's public API only (include/ursa.h).
 *
 * Bootstrap.  A constructor calls ursa_init(NULL) before main: the kernel thread that runs the
 * constructors becomes VP 0 and main an ursa thread (settings come from the URSA_* variables, as
 * for any ursa program; ursa-run sets them).  Returning from main or exit() from any thread ends
 * the process at once with its status (ursa_init's contract: no ursa_fini is needed, none is
 * called).  If ursa_init fails (a bad URSA_* setting, the child of a fork made with several VPs),
 * the constructor says so on stderr and the process runs on glibc: every call is forwarded.
 *
 * Who is served by ursa.  A call is served by the layer when the caller is an ursa thread, i.e.
 * when ursa_self() is not URSA_THREAD_NULL.  Every other caller is forwarded to glibc's own
 * function (dlsym(RTLD_NEXT), resolved at first use, so that calls made before the constructor
 * work too) and blocks its kernel thread as glibc would:
 *   - kernel threads ursa did not make: a library's helper thread, a signal-handling thread, and
 *     every thread created by such threads (their pthread_create is glibc's);
 *   - code that runs before the constructor or after ursa_init failed;
 *   - ursa itself.  libursa.so calls pthread_create (its VPs' kernel threads and the dump thread),
 *     pthread_join, pthread_sigmask, sem_wait / sem_post (the dump thread's bell),
 *     clock_nanosleep (an idle VP), sched_yield (its spin locks' back-off), pthread_once,
 *     pthread_self and pthread_getattr_np.  Under LD_PRELOAD those calls resolve to this
 *     library too, and some of them are made while an ursa thread is current (a spin lock's
 *     back-off inside ursa_mutex_lock, say): serving them with ursa would recurse into the
 *     scheduler.  So every entry point first checks its return address: a call from libursa.so's
 *     code (its executable segment, found once with dl_iterate_phdr) is forwarded, whoever runs
 *     it.  The check costs two compares.
 * The two populations must not share objects: a mutex locked by an ursa thread is an ursa-layer
 * mutex, and a kernel thread that ursa did not make cannot lock it (glibc would read the layer's
 * words as its own).  Objects initialized by glibc before the constructor and never locked then
 * (a static mutex, a mutex of a library's constructor) are fine: the layer reads glibc's kind
 * field where glibc keeps it.
 *
 * Objects live in the caller's memory, in glibc's sizes (static asserts in sync.c), with no
 * allocation: an all-zero object is an unlocked mutex, an unsignalled condition, a free rwlock,
 * which is what glibc's static initializers are, so an object initialized statically works from
 * its first use on any VP, without an init call or a race to make one.
 *
 * Threads.  pthread_create makes a detached ursa thread that runs a record's start function; the
 * record (a pthread_t is its address) keeps what POSIX needs and ursa does not: join and detach,
 * the exit value, the key values and their destructors (PTHREAD_KEYS_MAX keys, up to
 * PTHREAD_DESTRUCTOR_ITERATIONS rounds), cancellation and cleanup buffers, the name and the
 * attributes.  The stack size of an attribute is honoured; a default attribute gets ursa's
 * default stack (URSA_STACK_SIZE, 64 KiB), not glibc's 8 MiB; a stack address given with
 * pthread_attr_setstack is stored and reported but ursa maps its own stack of that size.
 *
 * Errors are POSIX's: positive errno values, errno for the sem_* functions and the sleeps.
 */
#include "upt.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- glibc's functions ------------------------------------------------------------------------ */

static void *reals[UPT_R_COUNT];

void *upt_real(int index, const char *name) {
  void *f = __atomic_load_n(&reals[index], __ATOMIC_ACQUIRE);
  if (upt_unlikely(f == NULL)) {
    f = dlsym(RTLD_NEXT, name);
    if (f == NULL) {
      fprintf(stderr, "ursa-pthread: the C library has no %s; aborting\n", name);
      abort();
    }
    __atomic_store_n(&reals[index], f, __ATOMIC_RELEASE);   /* release: pairs with the load */
  }
  return f;
}

/* ---- libursa's code --------------------------------------------------------------------------- */

uintptr_t upt_ursa_lo, upt_ursa_hi;  /* libursa.so's executable segment, [lo, hi)            */
int upt_solo;
int upt_explore;
struct upt_range upt_rt[UPT_RT_MAX];  /* the sanitizer runtimes' executable segments           */
int upt_rt_n;

static int find_ursa(struct dl_phdr_info *info, size_t size, void *data) {
  uintptr_t target = (uintptr_t)data;
  int i;
  (void)size;
  for (i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && target >= lo && target < hi) {
      if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0') return 1;   /* the program */
      upt_ursa_lo = lo;
      upt_ursa_hi = hi;
      return 1;
    }
  }
  return 0;
}

/* A sanitizer's runtime as a shared library (GCC's libasan, libtsan, libubsan, liblsan) calls
 * pthread_getspecific, pthread_key_create and others for its own bookkeeping of kernel threads,
 * and would reach this layer's (which allocates, which calls back into the runtime): its calls go
 * to glibc, as libursa's do.  (A runtime linked into the executable, as clang's, cannot be told
 * from the program: tests/CMakeLists.txt does not run the layer under those.) */
static int find_runtimes(struct dl_phdr_info *info, size_t size, void *data) {
  static const char *const names[] = { "/libasan.so", "/libtsan.so", "/libubsan.so", "/liblsan.so" };
  const char *n = info->dlpi_name;
  unsigned k;
  int i;
  (void)size;
  (void)data;
  if (n == NULL) return 0;
  for (k = 0; k < sizeof names / sizeof names[0]; k++)
    if (strstr(n, names[k]) != NULL) break;
  if (k == sizeof names / sizeof names[0]) return 0;
  for (i = 0; i < info->dlpi_phnum && upt_rt_n < UPT_RT_MAX; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      upt_rt[upt_rt_n].lo = info->dlpi_addr + ph->p_vaddr;
      upt_rt[upt_rt_n].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
      upt_rt_n++;
    }
  }
  return 0;
}

/* ---- the constructor -------------------------------------------------------------------------- */

int upt_booted;

/* fork.  With one VP the child keeps the runtime (include/ursa.h) and, for ursa's own API, every
 * thread.  POSIX gives the child the calling thread only: this handler, registered after ursa's
 * own (so it runs after it in the child), has ursa forget the others (ursa__forget_others: they
 * never run again, their stacks stay mapped, what they held stays held) and marks their records
 * gone (a pthread_join or pthread_cancel of one answers ESRCH).  The process then ends when the
 * child's last thread ends, with status 0 (pthread_exit of the calling thread, say).  With several
 * VPs, or a fork by a kernel thread that ursa did not make, the runtime stays in the parent and
 * the child runs on glibc's threads: there is nothing to do. */
static void upt_fork_child(void) {
  struct upt_thread *me;
  if (!__atomic_load_n(&upt_booted, __ATOMIC_ACQUIRE) || ursa_self() == URSA_THREAD_NULL) return;
  me = upt_self();
  if (me == NULL || ursa__forget_others() < 0) return;
  upt_forget_records(me);
}

__attribute__((constructor(101))) static void upt_boot(void) {
  int rc;
  int i;
  /* Resolve every forward now, while the process has one thread. */
#define UPT_RESOLVE(name) (void)upt_real(UPT_R_##name, #name);
  UPT_REALS(UPT_RESOLVE)
#undef UPT_RESOLVE
  (void)i;
  dl_iterate_phdr(find_ursa, (void *)(uintptr_t)&ursa_init);
  dl_iterate_phdr(find_runtimes, NULL);
  if (upt_ursa_lo == 0) {
    fprintf(stderr, "ursa-pthread: ursa is linked into the program, not loaded as libursa.so: "
                    "POSIX threads run on the system's threads\n");
    return;
  }
  /* A POSIX program whose threads all block waits (for a signal, say), as with glibc: it does
   * not end with ursa's deadlock report (URSA_DEADLOCK=exit asks for the report). */
  setenv("URSA_DEADLOCK", "wait", 0);
  rc = ursa_init(NULL);
  if (rc < 0) {
    if (rc != -ECHILD)
      fprintf(stderr, "ursa-pthread: ursa_init failed (%s): POSIX threads run on the system's "
                      "threads\n", ursa_strerror(rc));
    return;
  }
  upt_explore = ursa__exploring();
  upt_solo = upt_explore ? 2 : ursa_vp_count() == 1;   /* exploring: one VP, not the fast paths */
  upt_boot_threads();
  if (pthread_atfork(NULL, NULL, upt_fork_child) != 0)
    fprintf(stderr, "ursa-pthread: no room for a fork handler: the child of a fork keeps every "
                    "thread\n");
  __atomic_store_n(&upt_booted, 1, __ATOMIC_RELEASE);
}
