// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* job_control.c: commands whose job control would see gpusnoop's stops (interactive shells). */
#include <string.h>
#include "profilers/job_control.h"

static const char *const shells[] = { "sh",  "bash", "dash", "zsh", "ksh",  "mksh",
				      "ash", "fish", "tcsh", "csh", "yash", "posh" };

static bool is_shell(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (*base == '-')
		base++; /* a login shell's argv[0] */
	for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
		if (!strcmp(base, shells[i]))
			return true;
	return false;
}

bool gs_is_interactive_shell(char *const *argv, bool stdin_tty)
{
	bool cmd = false, interactive = false;
	size_t i = 1;

	if (!argv || !argv[0] || !is_shell(argv[0]))
		return false;
	for (; argv[i]; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--") || !strcmp(a, "-")) {
			i++;
			break;
		}
		if (!strcmp(a, "--interactive")) {
			interactive = true;
			continue;
		}
		if (a[0] == '-' && a[1] == '-')
			continue; /* --login, --norc, ... */
		if ((a[0] != '-' && a[0] != '+') || !a[1])
			break; /* the script, or -c's command */
		for (const char *c = a + 1; *c; c++) {
			interactive |= *c == 'i' && a[0] == '-';
			cmd |= *c == 'c';
			if ((*c == 'o' || *c == 'O') && argv[i + 1])
				i++; /* -o OPTION */
		}
	}
	return interactive || (!cmd && !argv[i] && stdin_tty);
}
