/* report.h: `hpctrain report`: the metrics file read back (report_json.c), summed up
 * (report.c) and drawn as SVG (svg.c, a small self-contained writer: no outside program). */
#ifndef HPCT_REPORT_H
#define HPCT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#define REPORT_MAX_FIELDS 48

/* One field of a record: a string, a number (true/false: 1/0) or null (also nested values). */
struct report_field {
    char key[48];
    char str[1024];
    double num;
    int is_str, is_null;
};

struct report_record {
    struct report_field f[REPORT_MAX_FIELDS];
    int n;
};

/* Parse one line holding one flat JSON object into r: 0, or -1 when it is not one (a torn
 * or damaged line). */
int report_parse(const char *line, struct report_record *r);
/* Field key of r, or NULL. */
const struct report_field *report_get(const struct report_record *r, const char *key);
/* Number field key, or missing when absent, null or a string. */
double report_num(const struct report_record *r, const char *key, double missing);
/* String field key, or "" when absent or not a string. */
const char *report_str(const struct report_record *r, const char *key);

/* ---- SVG plots ---------------------------------------------------------------------- */

struct svg_plot {
    FILE *f;
    double x0, x1, y0, y1;           /* data ranges */
    double left, top, width, height; /* plot area in pixels */
    double min_xstep;                /* smallest x tick step (1: whole numbers); 0: any */
};

/* A w x h picture titled title with axes for [x0, x1] x [y0, y1] (widened when empty); x ticks
 * at least min_xstep apart (0: any). */
int svg_begin(struct svg_plot *p, double min_xstep, const char *path, int w, int h,
              const char *title, const char *xlabel, const char *ylabel, double x0, double x1,
              double y0, double y1);
/* Series of n points (x [n], y [n]) named series, in color: a line through them (when line)
 * and one marker per point carrying data-step and data-value attributes. */
void svg_series(struct svg_plot *p, const char *series, const char *color, const double *x,
                const double *y, int n, int line);
/* A dashed vertical line at data x, labelled. */
void svg_vline(struct svg_plot *p, double x, const char *label);
/* Legend entry i (top right). */
void svg_legend(struct svg_plot *p, int i, const char *color, const char *label);
/* A bar from y = a to y = b (data units) centred at x, width in data units, with a title. */
void svg_bar(struct svg_plot *p, double x, double width, double a, double b, const char *color,
             const char *title);
/* Close the document; 0, or -1 when the file could not be written. */
int svg_end(struct svg_plot *p);

#endif
