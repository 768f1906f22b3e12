/*
 * A stop at admission for the host tests that need a call held inside the
 * library: stop_here is an admission hook (t4a_testing_admission_hook)
 * that stops the one thread that set tl_stop, once, until the main thread
 * lets it go. Arm with stop_reset() before that thread starts, then
 * stop_wait_arrived() returns once it is stopped and stop_let_go() lets
 * it go on. Include it in one source file of a test program.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef T4A_TESTS_ADMISSION_STOP_H
#define T4A_TESTS_ADMISSION_STOP_H

#include <pthread.h>

static pthread_mutex_t g_stop_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_stop_cv = PTHREAD_COND_INITIALIZER;
static int g_arrived, g_go;
static _Thread_local int tl_stop; /* set by the thread to stop */

static inline void stop_here(void *arg) {
  (void)arg;
  if (!tl_stop) return;
  tl_stop = 0;
  pthread_mutex_lock(&g_stop_mu);
  g_arrived = 1;
  pthread_cond_broadcast(&g_stop_cv);
  while (!g_go) pthread_cond_wait(&g_stop_cv, &g_stop_mu);
  pthread_mutex_unlock(&g_stop_mu);
}

/* Before the thread to stop starts: none arrived, none let go. */
static inline void stop_reset(void) { g_arrived = g_go = 0; }

/* Returns once the thread is stopped in stop_here. */
static inline void stop_wait_arrived(void) {
  pthread_mutex_lock(&g_stop_mu);
  while (!g_arrived) pthread_cond_wait(&g_stop_cv, &g_stop_mu);
  pthread_mutex_unlock(&g_stop_mu);
}

/* Lets the stopped thread go on. */
static inline void stop_let_go(void) {
  pthread_mutex_lock(&g_stop_mu);
  g_go = 1;
  pthread_cond_broadcast(&g_stop_cv);
  pthread_mutex_unlock(&g_stop_mu);
}

#endif /* T4A_TESTS_ADMISSION_STOP_H */
