/* info.c: `hpctrain info`: the library's environment settings (the registry behind
 * hpct_tunable_get), each with its value and where it came from, like ompi_info;
 * --names lists the names only, --check checks the environment as hpct_init would. */
#include "config.h"
#include "hpctrain.h"
#include "tools.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: hpctrain info [--names | --check]\n\n"
                 "Lists the library's HPCT_* environment settings: name, value and source\n"
                 "(environment or default), accepted values and what each does.\n"
                 "  --names  the names only, one a line\n"
                 "  --check  check the settings set in the environment, as hpct_init does:\n"
                 "           exit 2 naming the first bad one, 0 when all are valid\n");
}

/* One setting as a block: "NAME = VALUE (source)", then accepted, ranks and help. */
static void print_one(const hpct_tunable_info_t *t)
{
    printf("%s = %s (%s)\n", t->name, t->value ? t->value : t->default_value,
           t->value ? "environment" : "default");
    printf("    accepted: %s%s\n", t->accepted, t->ranks_agree ? "; the same on every rank" : "");
    printf("    %s\n", t->help);
}

static int list(int names_only)
{
    int n = hpct_tunables_count();
    for (int i = 0; i < n; i++) {
        hpct_tunable_info_t t = HPCT_TUNABLE_INFO_INITIALIZER;
        if (hpct_tunable_get(i, &t) != HPCT_SUCCESS) return TOOL_FAILED;
        if (names_only)
            printf("%s\n", t.name);
        else
            print_one(&t);
    }
    return TOOL_OK;
}

static int check(void)
{
    char detail[1024];
    if (hpct_tunables_check(detail, sizeof detail) == HPCT_SUCCESS) {
        printf("hpctrain info: the %d settings are valid\n", hpct_tunables_count());
        return TOOL_OK;
    }
    fprintf(stderr, "hpctrain info: error: %s\n", detail);
    return TOOL_USAGE;
}

int tool_info_main(int argc, char **argv)
{
    if (argc == 1) return list(0);
    if (argc == 2 && !strcmp(argv[1], "--names")) return list(1);
    if (argc == 2 && !strcmp(argv[1], "--check")) return check();
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return TOOL_OK;
    }
    usage(stderr);
    return TOOL_USAGE;
}
