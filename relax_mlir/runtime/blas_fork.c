/* relax_blas, fork handling.
 *
 * fork(): GNU OpenMP does not survive fork (a child that uses the parent's thread pool hangs
 * in its first parallel region), so a pthread_atfork child handler marks the child and its
 * next BLAS call sets MKL to 1 thread first (RELAX_BLAS_NUM_THREADS does not apply there);
 * kept on libiomp5 too.
 * OpenBLAS re-initialises its own threads in the child.
 */
#define _GNU_SOURCE /* dladdr */
#include "blas_shim.h"
#include <pthread.h>

/* Set in a forked child; read (and cleared) by the child's next BLAS call. */
static volatile int forked_child = 0;
static void mark_forked_child(void) { forked_child = 1; }

void after_fork(void) {
#ifdef RESET_THREADS_AFTER_FORK
  if (forked_child) {
    forked_child = 0;
    set_threads(1);
  }
#endif
}

__attribute__((constructor)) static void relax_blas_fork_init(void) { pthread_atfork(NULL, NULL, mark_forked_child); }
