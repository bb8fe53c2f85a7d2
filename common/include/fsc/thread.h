/*
 * fsc/thread.h — names for fragscope's threads, so that `top -H`, `ps -L`
 * and /proc/PID/task/TID/comm tell them apart (at most 15 bytes).
 */
#ifndef FSC_THREAD_H
#define FSC_THREAD_H

#ifdef __linux__
#include <sys/prctl.h>
#endif

static inline void fsc__thread_name(const char *name)
{
#ifdef __linux__
    prctl(PR_SET_NAME, name, 0, 0, 0);
#else
    (void)name;
#endif
}

#endif
