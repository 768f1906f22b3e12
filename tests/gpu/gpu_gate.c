/*
 * t4a_gpu_gate PROGRAM [ARGS...]: the GPU lane's gate for a program that is
 * not a test itself (the README's saxpy, examples/saxpy.cpp). Without a
 * usable GPU it prints "SKIPPED: <reason>" and exits 77 (ctest SKIPPED), or
 * fails when T4A_REQUIRE_GPU asks for a GPU (gpu_lane_require()); with one
 * it runs PROGRAM and exits with its status (1 if it was killed by a
 * signal, such as the abort of an uncaught exception).
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "gpu_support.h"

extern char **environ;

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: t4a_gpu_gate PROGRAM [ARGS...]\n");
    return 2;
  }
  gpu_lane_require(1);
  pid_t pid = 0;
  int err = posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, environ);
  if (err != 0) {
    fprintf(stderr, "FAILED: cannot run %s: %s\n", argv[1], strerror(err));
    return 1;
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) {
    perror("FAILED: waitpid");
    return 1;
  }
  if (WIFEXITED(status)) {
    int code = WEXITSTATUS(status);
    if (code == 77) {
      /* 77 would read as SKIPPED: a program run past the gate must not
       * skip. */
      fprintf(stderr, "FAILED: %s exited 77 after the GPU gate\n", argv[1]);
      return 1;
    }
    if (code != 0) fprintf(stderr, "FAILED: %s exited %d\n", argv[1], code);
    return code;
  }
  fprintf(stderr, "FAILED: %s was killed by signal %d\n", argv[1],
          WIFSIGNALED(status) ? WTERMSIG(status) : -1);
  return 1;
}
