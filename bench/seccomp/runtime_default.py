#!/usr/bin/env python3
"""Writes a rough equivalent of the Docker/containerd RuntimeDefault seccomp profile (moby
profiles/seccomp/default.json, the no-capability view for x86_64/aarch64) as OCI JSON on stdout.
Used by bench/seccomp/run (cost per syscall) and e2e/seccomp.test.sh (`seccomp --diff`)."""
import json

ALLOW = """accept accept4 access alarm bind brk cachestat capget capset chdir chmod chown clock_getres
clock_gettime clock_nanosleep close close_range connect copy_file_range creat dup dup2 dup3 epoll_create
epoll_create1 epoll_ctl epoll_ctl_old epoll_pwait epoll_pwait2 epoll_wait epoll_wait_old eventfd eventfd2
execve execveat exit exit_group faccessat faccessat2 fadvise64 fallocate fanotify_mark fchdir fchmod fchmodat
fchmodat2 fchown fchownat fcntl fdatasync fgetxattr flistxattr flock fork fremovexattr fsetxattr fstat fstatfs
fsync ftruncate futex futex_requeue futex_wait futex_waitv futex_wake futimesat getcpu getcwd getdents
getdents64 getegid geteuid getgid getgroups getitimer get_mempolicy getpeername getpgid getpgrp getpid getppid
getpriority getrandom getresgid getresuid getrlimit get_robust_list getrusage getsid getsockname getsockopt
get_thread_area gettid gettimeofday getuid getxattr inotify_add_watch inotify_init inotify_init1
inotify_rm_watch io_cancel ioctl io_destroy io_getevents io_pgetevents ioprio_get ioprio_set io_setup io_submit
kill landlock_add_rule landlock_create_ruleset landlock_restrict_self lchown lgetxattr link linkat listen
listxattr llistxattr lremovexattr lseek lsetxattr lstat madvise map_shadow_stack membarrier memfd_create
memfd_secret mincore mkdir mkdirat mknod mknodat mlock mlock2 mlockall mmap mprotect mq_getsetattr mq_notify
mq_open mq_timedreceive mq_timedsend mq_unlink mremap msgctl msgget msgrcv msgsnd msync munlock munlockall
munmap name_to_handle_at nanosleep newfstatat open openat openat2 pause pidfd_open pidfd_send_signal pipe pipe2
pkey_alloc pkey_free pkey_mprotect poll ppoll prctl pread64 preadv preadv2 prlimit64 process_mrelease pselect6
pwrite64 pwritev pwritev2 read readahead readlink readlinkat readv recvfrom recvmmsg recvmsg remap_file_pages
removexattr rename renameat renameat2 restart_syscall rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask
rt_sigqueueinfo rt_sigreturn rt_sigsuspend rt_sigtimedwait rt_tgsigqueueinfo sched_getaffinity sched_getattr
sched_getparam sched_get_priority_max sched_get_priority_min sched_getscheduler sched_rr_get_interval
sched_setaffinity sched_setattr sched_setparam sched_setscheduler sched_yield seccomp select semctl semget semop
semtimedop sendfile sendmmsg sendmsg sendto setfsgid setfsuid setgid setgroups setitimer setpgid setpriority
setregid setresgid setresuid setreuid setrlimit set_robust_list setsid setsockopt set_thread_area
set_tid_address setuid setxattr shmat shmctl shmdt shmget shutdown sigaltstack signalfd signalfd4 socket
socketpair splice stat statfs statx symlink symlinkat sync sync_file_range syncfs sysinfo tee tgkill time
timer_create timer_delete timer_getoverrun timer_gettime timer_settime timerfd_create timerfd_gettime
timerfd_settime times tkill truncate umask uname unlink unlinkat utime utimensat utimes vfork vmsplice wait4
waitid waitpid write writev arch_prctl modify_ldt""".split()

CLONE_NS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET


def main():
    calls = [{"names": ALLOW, "action": "SCMP_ACT_ALLOW"}]
    for v in (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF):
        calls.append({"names": ["personality"], "action": "SCMP_ACT_ALLOW",
                      "args": [{"index": 0, "value": v, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]})
    calls.append({"names": ["clone"], "action": "SCMP_ACT_ALLOW",
                  "args": [{"index": 0, "value": CLONE_NS, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]})
    calls.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38})
    calls.append({"names": ["socket"], "action": "SCMP_ACT_ALLOW",
                  "args": [{"index": 0, "value": 40, "valueTwo": 0, "op": "SCMP_CMP_NE"}]})
    # ALLOW above lists socket unconditionally as older Docker releases did; keep only the AF_VSOCK rule
    ALLOW.remove("socket")
    print(json.dumps({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
                      "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
                      "syscalls": calls}, indent=1))


if __name__ == "__main__":
    main()
