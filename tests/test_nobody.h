/*
 * test_nobody.h — a real permission error for tests that run as root, where
 * chmod 000 denies nothing. Such a test gives the files involved to `nobody`
 * (test_give_to_nobody), makes one unreadable with chmod 000, and does the
 * reading in a child that dropped to nobody (test_become_nobody): open() then
 * fails with EACCES exactly as it does for a user whose checkpoint another
 * user made unreadable. Run as another user, the test needs neither: its
 * chmod 000 already denies the test itself.
 */
#ifndef SYM_TEST_NOBODY_H
#define SYM_TEST_NOBODY_H

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* nobody's ids; 0 when the test is not root (nothing to drop) or nobody is
 * unknown (then *uid is 0 too). */
static inline int test_nobody(uid_t *uid, gid_t *gid) {
    *uid = 0;
    *gid = 0;
    if (geteuid() != 0) return 0;
    struct passwd *pw = getpwnam("nobody");
    if (!pw || pw->pw_uid == 0) return 0;
    *uid = pw->pw_uid;
    *gid = pw->pw_gid;
    return 1;
}

/* As root: path and everything under it (links not followed) now belongs to
 * nobody. Does nothing for another user. */
static inline void test_give_to_nobody(const char *path) {
    uid_t uid;
    gid_t gid;
    if (!test_nobody(&uid, &gid)) return;
    CHECK(lchown(path, uid, gid) == 0, "lchown %s", path);
    struct stat st;
    CHECK(lstat(path, &st) == 0, "lstat %s", path);
    if (!S_ISDIR(st.st_mode)) return;
    DIR *d = opendir(path);
    CHECK(d != NULL, "opendir %s", path);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            test_give_to_nobody(sub);
        }
    closedir(d);
}

/* In a child process: as root, become nobody (groups, gid, uid, for good);
 * 0, or -1 when that is refused (a container without CAP_SETUID). Another
 * user stays who it is. */
static inline int test_become_nobody(void) {
    uid_t uid;
    gid_t gid;
    if (!test_nobody(&uid, &gid)) return geteuid() == 0 ? -1 : 0;
    if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0) return -1;
    return geteuid() == uid ? 0 : -1;
}

/* Can a child become nobody here (or is the test not root)? Forks to try. */
static inline int test_can_drop(void) {
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) _exit(test_become_nobody() < 0 ? 1 : 0);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

#endif
