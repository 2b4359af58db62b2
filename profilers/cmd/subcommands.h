/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* subcommands.h: entry points of the gpusnoop subcommands, dispatched by profilers/cmd/main.c. */
#ifndef GS_SUBCOMMANDS_H
#define GS_SUBCOMMANDS_H

/* Each returns the process exit status (0 or 1). argv[0] is the subcommand name. */
int gs_cmd_leaks(int argc, char **argv);
int gs_cmd_record(int argc, char **argv);
int gs_cmd_profile(int argc, char **argv);
int gs_cmd_top(int argc, char **argv);
int gs_cmd_daemon(int argc, char **argv);
int gs_cmd_ctl(int argc, char **argv);
int gs_cmd_stitch(int argc, char **argv);
int gs_cmd_stats(int argc, char **argv);
int gs_cmd_check(int argc, char **argv);

#endif /* GS_SUBCOMMANDS_H */
