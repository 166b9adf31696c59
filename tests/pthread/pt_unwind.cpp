// pt_unwind.cpp - cancellation and pthread_exit unwind a C++ thread's stack under the POSIX layer
// (issue #17: the forced unwind of src/pthread/thread.c).  Compiled normally with the system g++;
// tests/CMakeLists.txt runs it through ursa-run at 1 VP (cm), 2 VPs and under cp-ts.
//   - a thread cancelled in pthread_cond_wait runs the destructors of 3 nested objects, innermost
//     first, and a catch (...) that rethrows; a guard's destructor gives the mutex back;
//   - a thread cancelled in sleep() does the same, with catch (abi::__forced_unwind &) rethrowing;
//   - pthread_exit from a nested function runs the destructors, and the join gets its value;
//   - the C++ form of pthread_cleanup_push / pop (a class in glibc's header) runs its routine;
//   - a C frame's buffer (pt_unwind_mid.c) runs between the C++ frames around it;
//   - keys' destructors run after the stack is unwound;
//   - main's pthread_exit unwinds main too, and the process goes on until its last thread ends.
// `pt_unwind swallow`: a catch (...) that does not rethrow aborts the process, saying why.
// Every thread is checked to be an ursa thread.  Prints "unwind ok" last; a failed check prints
// its line and exits 1.
#include <cxxabi.h>
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CHECK(c) do { if (!(c)) { std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); std::exit(1); } } while (0)

static void *(*ursa_self_fn)();
static void on_ursa() { CHECK(ursa_self_fn != nullptr && ursa_self_fn() != nullptr); }

static std::string trail;           // what ran, in order (one thread writes at a time)
static pthread_mutex_t tm = PTHREAD_MUTEX_INITIALIZER;
static void note(const char *s) {
  pthread_mutex_lock(&tm);
  trail += s;
  trail += ' ';
  pthread_mutex_unlock(&tm);
}

struct Obj {
  const char *name;
  explicit Obj(const char *n) : name(n) {}
  ~Obj() { note(name); }
};

struct Unlock {                      // gives the mutex back when the stack unwinds
  pthread_mutex_t *m;
  ~Unlock() { pthread_mutex_unlock(m); note("unlock"); }
};

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile int waiting;

static void *in_cond(void *) {
  on_ursa();
  try {
    Obj a("a1");
    {
      Obj b("b1");
      pthread_mutex_lock(&m);
      Unlock u{&m};
      {
        Obj c("c1");
        waiting = 1;
        for (;;) pthread_cond_wait(&cv, &m);   // a cancellation point: never returns otherwise
      }
    }
  } catch (...) {
    note("catch1");
    throw;                                      // the forced unwind must go on
  }
  return nullptr;
}

// (libstdc++ binds abi::__forced_unwind & to a null address, natively with glibc too: UBSan's
// null check, on in the ASan build, would report it)
#if defined(__GNUC__)
__attribute__((no_sanitize("undefined")))
#endif
static void *in_sleep(void *) {
  on_ursa();
  try {
    Obj a("a2");
    Obj b("b2");
    Obj c("c2");
    waiting = 1;
    for (;;) sleep(100);
  } catch (abi::__forced_unwind &) {
    note("forced2");
    throw;
  }
  return nullptr;
}

static void deep_exit(int depth) {
  Obj o(depth == 0 ? "x0" : depth == 1 ? "x1" : "x2");
  if (depth == 2) pthread_exit(reinterpret_cast<void *>(intptr_t(77)));
  deep_exit(depth + 1);
}
static void *exits_nested(void *) {
  on_ursa();
  Obj top("top");
  deep_exit(0);
  return nullptr;
}

static void routine(void *arg) { note(static_cast<const char *>(arg)); }
static void *cleanup_form(void *) {
  on_ursa();
  Obj o("o4");
  pthread_cleanup_push(routine, const_cast<char *>("routine4"));
  waiting = 1;
  for (;;) pthread_testcancel(), sched_yield();
  pthread_cleanup_pop(0);
  return nullptr;
}

// a C frame (pt_unwind_mid.c, no -fexceptions: glibc's C macro) between C++ frames
extern "C" void pt_unwind_note(const char *s) { note(s); }
extern "C" void pt_unwind_c_middle(void (*inner)());
static void inner6() {
  Obj o("inner6");
  waiting = 1;
  for (;;) sleep(100);
}
static void *mixed(void *) {
  on_ursa();
  Obj o("outer6");
  pt_unwind_c_middle(inner6);
  return nullptr;
}

static pthread_key_t key;
static void key_dtor(void *v) { note(static_cast<const char *>(v)); }
static void *with_key(void *) {
  on_ursa();
  Obj o("o5");
  pthread_setspecific(key, "key5");
  pthread_exit(nullptr);
}

static void wait_then_cancel(pthread_t t, bool take_mutex) {
  while (!waiting) sched_yield();
  if (take_mutex) {                             // in the wait once it has let the mutex go
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
  }
  for (int i = 0; i < 3; i++) sched_yield();
  CHECK(pthread_cancel(t) == 0);
}

static void expect(const char *want) {
  if (trail != want) {
    std::fprintf(stderr, "trail \"%s\", expected \"%s\"\n", trail.c_str(), want);
    std::exit(1);
  }
  trail.clear();
  waiting = 0;
}

static sem_t main_gone;
static void *outlives_main(void *) {
  on_ursa();
  CHECK(sem_wait(&main_gone) == 0);           // posted by main's destructor, as main unwinds
  expect("main1 main0 ");
  std::printf("unwind ok\n");
  std::fflush(stdout);
  return nullptr;                               // the last thread: the process ends, status 0
}
struct MainObj {
  const char *name;
  ~MainObj() { note(name); if (std::strcmp(name, "main0") == 0) sem_post(&main_gone); }
};
static void main_nested() {
  MainObj o{"main1"};
  pthread_exit(nullptr);
}

// `pt_unwind swallow`: a catch (...) that does not rethrow the forced unwind; the layer must
// abort the process saying so (glibc does the same), not let the cancelled thread go on.
static void *swallows(void *) {
  on_ursa();
  try {
    waiting = 1;
    for (;;) sleep(100);
  } catch (...) {
    note("swallowed");
  }
  std::printf("the cancelled thread went on\n");
  return nullptr;
}

int main(int argc, char **argv) {
  pthread_t t;
  void *r;
  ursa_self_fn = reinterpret_cast<void *(*)()>(dlsym(RTLD_DEFAULT, "ursa_self"));
  on_ursa();
  if (argc == 2 && std::strcmp(argv[1], "swallow") == 0) {
    CHECK(pthread_create(&t, nullptr, swallows, nullptr) == 0);
    wait_then_cancel(t, false);
    pthread_join(t, &r);
    std::printf("joined\n");
    return 0;
  }

  CHECK(pthread_create(&t, nullptr, in_cond, nullptr) == 0);
  wait_then_cancel(t, true);
  CHECK(pthread_join(t, &r) == 0 && r == PTHREAD_CANCELED);
  expect("c1 unlock b1 a1 catch1 ");
  CHECK(pthread_mutex_trylock(&m) == 0);       // the guard gave it back
  pthread_mutex_unlock(&m);

  CHECK(pthread_create(&t, nullptr, in_sleep, nullptr) == 0);
  wait_then_cancel(t, false);
  CHECK(pthread_join(t, &r) == 0 && r == PTHREAD_CANCELED);
  expect("c2 b2 a2 forced2 ");

  CHECK(pthread_create(&t, nullptr, exits_nested, nullptr) == 0);
  CHECK(pthread_join(t, &r) == 0 && r == reinterpret_cast<void *>(intptr_t(77)));
  expect("x2 x1 x0 top ");

  CHECK(pthread_create(&t, nullptr, cleanup_form, nullptr) == 0);
  wait_then_cancel(t, false);
  CHECK(pthread_join(t, &r) == 0 && r == PTHREAD_CANCELED);
  expect("routine4 o4 ");

  CHECK(pthread_create(&t, nullptr, mixed, nullptr) == 0);
  wait_then_cancel(t, false);
  CHECK(pthread_join(t, &r) == 0 && r == PTHREAD_CANCELED);
  expect("inner6 cmid outer6 ");                // C++, the C buffer, C++: in stack order

  CHECK(pthread_key_create(&key, key_dtor) == 0);
  CHECK(pthread_create(&t, nullptr, with_key, nullptr) == 0);
  CHECK(pthread_join(t, &r) == 0 && r == nullptr);
  expect("o5 key5 ");                           // the stack first, then the keys

  CHECK(sem_init(&main_gone, 0, 0) == 0);
  CHECK(pthread_create(&t, nullptr, outlives_main, nullptr) == 0);
  CHECK(pthread_detach(t) == 0);
  MainObj o{"main0"};
  main_nested();                                // main ends here; the other thread goes on
  return 1;
}
