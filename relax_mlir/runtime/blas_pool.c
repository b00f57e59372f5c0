/* One thread pool per process: OpenBLAS's parallel work on our OpenMP runtime (libiomp5).
 *
 * OpenBLAS (numpy's, scipy's, relax_blas's fallback) keeps its own pthread workers, which
 * spin for ~0.1 s after every threaded call (their thread timeout, read once at load). Our
 * kernels' OpenMP team called in that window shares a core with a spinning worker and ran
 * 2.2-2.5x slower (bench/bench_contention.py). OpenBLAS 0.3.27+ can hand its parallel jobs
 * to the caller instead (openblas_set_threads_callback_function, cblas.h): this is that
 * callback. relax_mlir.runtime.libraries.share_blas_threads() installs it; built with
 * -fopenmp and linked against libiomp5, so the region below runs on the same team as our
 * kernels (libiomp5 implements the GOMP_* entry points gcc emits).
 *
 * OpenBLAS's jobs of one call must run concurrently (the threaded level-3 routines wait on
 * each other's packed panels), so job t runs on team thread t, and jobs a smaller team
 * cannot take (a region nested in another one, OMP_THREAD_LIMIT) run on threads of their
 * own. The job's thread number picks OpenBLAS's per-thread buffer, so two calls at once
 * (numpy releases the GIL) would share buffers: calls are serialized. */

#include <omp.h>
#include <pthread.h>
#include <stddef.h>

typedef void (*relax_dojob)(int thread_num, void *jobdata, int dojob_data);

struct job {
  relax_dojob dojob;
  void *data;
  int thread_num;
  int dojob_data;
};

static void *run_job(void *p) {
  struct job *j = (struct job *)p;
  j->dojob(j->thread_num, j->data, j->dojob_data);
  return NULL;
}

static pthread_mutex_t relax_blas_pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* a child forked while another thread held the lock must not inherit it held */
static void reset_lock_in_child(void) { pthread_mutex_init(&relax_blas_pool_lock, NULL); }

__attribute__((constructor)) static void relax_blas_pool_init(void) {
  pthread_atfork(NULL, NULL, reset_lock_in_child);
}

/* Calls handed to the pool, and how many of their jobs ran on threads of their own. */
long relax_blas_pool_calls = 0;
long relax_blas_pool_extra_threads = 0;

void relax_blas_pool_run(int sync, relax_dojob dojob, int numjobs, size_t elsize, void *jobdata,
                         int dojob_data) {
  (void)sync; /* OpenBLAS passes 1: return when every job is done */
  if (numjobs <= 0) return;
  pthread_mutex_lock(&relax_blas_pool_lock);
  relax_blas_pool_calls++;
  int dynamic = omp_get_dynamic();
  omp_set_dynamic(0);
#pragma omp parallel num_threads(numjobs)
  {
    int t = omp_get_thread_num(), team = omp_get_num_threads();
    if (t == 0 && team < numjobs) {
      /* the team is short: the jobs it cannot take each get a thread, started before job 0 */
      int extra = numjobs - team;
      struct job jobs[extra];
      pthread_t threads[extra];
      int started[extra];
      for (int i = 0; i < extra; i++) {
        int n = team + i;
        jobs[i] = (struct job){dojob, (char *)jobdata + (size_t)n * elsize, n, dojob_data};
        started[i] = pthread_create(&threads[i], NULL, run_job, &jobs[i]) == 0;
      }
      dojob(0, jobdata, dojob_data);
      for (int i = 0; i < extra; i++) {
        if (started[i]) pthread_join(threads[i], NULL);
        else run_job(&jobs[i]); /* no thread to be had: run it here, after job 0 */
      }
      relax_blas_pool_extra_threads += extra;
    } else if (t < numjobs) {
      dojob(t, (char *)jobdata + (size_t)t * elsize, dojob_data);
    }
  }
  omp_set_dynamic(dynamic);
  pthread_mutex_unlock(&relax_blas_pool_lock);
}
