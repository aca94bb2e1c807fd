/* svg.c: a small SVG 1.1 writer for `hpctrain report`: axes with round ticks, polylines,
 * markers, bars and labels. No outside program or library: the plots are written on a login
 * node where gnuplot or Python may be missing, and any browser opens them. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MARGIN_L 70.0
#define MARGIN_R 150.0
#define MARGIN_T 40.0
#define MARGIN_B 50.0

static double px(const struct svg_plot *p, double x)
{
    return p->left + (x - p->x0) / (p->x1 - p->x0) * p->width;
}

static double py(const struct svg_plot *p, double y)
{
    return p->top + p->height - (y - p->y0) / (p->y1 - p->y0) * p->height;
}

/* text with &, < and > escaped */
static void text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

/* A round tick step giving about n ticks over span. */
static double tick_step(double span, int n)
{
    double raw = span / n, mag = pow(10.0, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

static void widen(double *a, double *b)
{
    if (!isfinite(*a) || !isfinite(*b)) *a = 0, *b = 1;
    if (*b <= *a) {
        double m = fabs(*a) > 0 ? fabs(*a) * 0.1 : 1.0;
        *a -= m, *b += m;
    }
}

static void axes(struct svg_plot *p, const char *xlabel, const char *ylabel)
{
    FILE *f = p->f;
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#444\"/>\n",
            p->left, p->top, p->width, p->height);
    double sx = tick_step(p->x1 - p->x0, 8), sy = tick_step(p->y1 - p->y0, 6);
    if (sx < p->min_xstep) sx = p->min_xstep;
    for (double x = ceil(p->x0 / sx) * sx; x <= p->x1 + 1e-9 * sx; x += sx)
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n",
                px(p, x), p->top, px(p, x), p->top + p->height, px(p, x), p->top + p->height + 15,
                x);
    for (double y = ceil(p->y0 / sy) * sy; y <= p->y1 + 1e-9 * sy; y += sy)
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.4g</text>\n",
                p->left, py(p, y), p->left + p->width, py(p, y), p->left - 5, py(p, y) + 4, y);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">",
            p->left + p->width / 2, p->top + p->height + 35);
    text(f, xlabel);
    fprintf(f,
            "</text>\n<text x=\"15\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 15 %.1f)\">",
            p->top + p->height / 2, p->top + p->height / 2);
    text(f, ylabel);
    fputs("</text>\n", f);
}

int svg_begin(struct svg_plot *p, double min_xstep, const char *path, int w, int h,
              const char *title, const char *xlabel, const char *ylabel, double x0, double x1,
              double y0, double y1)
{
    memset(p, 0, sizeof *p);
    p->min_xstep = min_xstep;
    p->f = fopen(path, "w");
    if (!p->f) return -1;
    widen(&x0, &x1);
    widen(&y0, &y1);
    p->x0 = x0, p->x1 = x1, p->y0 = y0, p->y1 = y1;
    p->left = MARGIN_L, p->top = MARGIN_T;
    p->width = w - MARGIN_L - MARGIN_R, p->height = h - MARGIN_T - MARGIN_B;
    fprintf(p->f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.1f\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">",
            w, h, w, h, MARGIN_L + p->width / 2);
    text(p->f, title);
    fputs("</text>\n", p->f);
    axes(p, xlabel, ylabel);
    return 0;
}

void svg_series(struct svg_plot *p, const char *series, const char *color, const double *x,
                const double *y, int n, int line)
{
    FILE *f = p->f;
    fprintf(f, "<g class=\"series\" data-series=\"");
    text(f, series);
    fputs("\">\n", f);
    if (line && n > 1) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", color);
        for (int i = 0, first = 1; i < n; i++)
            if (isfinite(x[i]) && isfinite(y[i])) { /* a null value (NaN) leaves a point out */
                fprintf(f, "%s%.1f,%.1f", first ? "" : " ", px(p, x[i]), py(p, y[i]));
                first = 0;
            }
        fputs("\"/>\n", f);
    }
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i]))
            fprintf(f,
                    "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\" data-step=\"%.0f\" "
                    "data-value=\"%.9g\"/>\n",
                    px(p, x[i]), py(p, y[i]), line ? "2" : "4", color, x[i], y[i]);
    fputs("</g>\n", f);
}

void svg_vline(struct svg_plot *p, double x, const char *label)
{
    fprintf(p->f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" "
            "stroke-dasharray=\"4,3\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
            "fill=\"#666\">",
            px(p, x), p->top, px(p, x), p->top + p->height, px(p, x) + 3, p->top + 12);
    text(p->f, label);
    fputs("</text>\n", p->f);
}

void svg_legend(struct svg_plot *p, int i, const char *color, const char *label)
{
    double x = p->left + p->width + 12, y = p->top + 10 + 18 * i;
    fprintf(p->f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">",
            x, y - 10, color, x + 17, y);
    text(p->f, label);
    fputs("</text>\n", p->f);
}

void svg_bar(struct svg_plot *p, double x, double width, double a, double b, const char *color,
             const char *title)
{
    double l = px(p, x - width / 2), r = px(p, x + width / 2), t = py(p, b), bot = py(p, a);
    fprintf(p->f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
            "data-value=\"%.9g\"><title>",
            l, t, r - l, bot - t, color, b - a);
    text(p->f, title);
    fputs("</title></rect>\n", p->f);
}

int svg_end(struct svg_plot *p)
{
    fputs("</svg>\n", p->f);
    int bad = ferror(p->f);
    bad |= fclose(p->f) != 0;
    p->f = NULL;
    return bad ? -1 : 0;
}
