/* mapguard.h: copies out of mapped shard files that survive the file shrinking underneath.
 * A file truncated while mapped (rewritten in place during the job) makes a read of the lost
 * pages raise SIGBUS; inside a guarded copy the handler jumps back and the copy fails with a
 * status instead of killing the process. */
#ifndef HPCTI_MAPGUARD_H
#define HPCTI_MAPGUARD_H

#include <setjmp.h>

/* Install the SIGBUS handler for the first user (process-wide, reference counted): 0, or -1
 * when it cannot be installed (then do not map). */
int hpcti_mapguard_acquire(void);
/* Drop one user; the last puts back the handler that was there before, if still ours. */
void hpcti_mapguard_release(void);

/* Guarded region on the calling thread: after `if (sigsetjmp(jb, 0)) { fault path }`, call
 * enter(&jb), copy, leave(). A SIGBUS between enter and leave returns through jb with the
 * region left and SIGBUS unblocked again by hpcti_mapguard_recover(), which the fault path
 * must call first. No system call on the normal path. */
void hpcti_mapguard_enter(sigjmp_buf *jb);
void hpcti_mapguard_leave(void);
void hpcti_mapguard_recover(void);

#endif
