/* pthreads: 4 threads contend on a mutex, signal a condition variable, use
 * thread-local storage and floating point, and are joined (CLONE_CHILD_CLEARTID
 * + futex wake). The output must equal the host's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static long counter;
static int ready;
static __thread int tls_val;
static void *worker(void *arg)
{
	long id = (long)arg;
	tls_val = (int)id * 10;
	for (int i = 0; i < 100000; i++) {
		pthread_mutex_lock(&m);
		counter++;
		pthread_mutex_unlock(&m);
	}
	pthread_mutex_lock(&m);
	ready++;
	pthread_cond_signal(&c);
	pthread_mutex_unlock(&m);
	double x = 0;
	for (int i = 1; i < 1000; i++)
		x += 1.0 / i; /* FPU state per thread */
	return (void *)(long)(tls_val + (x > 7.48 ? 1 : 0));
}
int main(void)
{
	pthread_t t[4];
	long sum = 0;
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	pthread_mutex_lock(&m);
	while (ready < 4)
		pthread_cond_wait(&c, &m);
	pthread_mutex_unlock(&m);
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(t[i], &r);
		sum += (long)r;
	}
	printf("counter %ld sum %ld tids-differ %d\n", counter, sum,
	       (int)(syscall(SYS_gettid) == getpid()));
	return counter == 400000 ? 0 : 1;
}
