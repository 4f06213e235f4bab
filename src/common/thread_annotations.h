#pragma once
// Clang's thread-safety attributes (-Wthread-safety), as LevelDB and Abseil
// spell them: which mutex guards a member, which a function needs held or
// must not hold, and the order mutexes are taken in. Under other compilers
// they expand to nothing. They check only capabilities declared as such: use
// common/mutex.h's Mutex and MutexLock, not std::mutex, where they matter.
#if defined(__clang__)
#define IG_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define IG_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (a capability).
#define IG_CAPABILITY(name) IG_THREAD_ANNOTATION(capability(name))
// An RAII type that holds a capability for its lifetime.
#define IG_SCOPED_CAPABILITY IG_THREAD_ANNOTATION(scoped_lockable)
// The member is read and written only with `mu` held.
#define IG_GUARDED_BY(mu) IG_THREAD_ANNOTATION(guarded_by(mu))
// What the pointer points to is guarded by `mu` (the pointer itself is not).
#define IG_PT_GUARDED_BY(mu) IG_THREAD_ANNOTATION(pt_guarded_by(mu))
// Lock order: this mutex is taken before (after) the ones named.
#define IG_ACQUIRED_BEFORE(...) IG_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define IG_ACQUIRED_AFTER(...) IG_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
// The caller must hold (must not hold) the capability.
#define IG_REQUIRES(...) IG_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define IG_EXCLUDES(...) IG_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// The function takes (releases) the capability and returns with it held (not).
#define IG_ACQUIRE(...) IG_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define IG_RELEASE(...) IG_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// Returns a reference to the capability.
#define IG_RETURN_CAPABILITY(x) IG_THREAD_ANNOTATION(lock_returned(x))
// Opts one function out of the analysis (say why where it is used).
#define IG_NO_THREAD_SAFETY_ANALYSIS IG_THREAD_ANNOTATION(no_thread_safety_analysis)
