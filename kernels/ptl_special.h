/* ptl_special.h: the special functions of pytorchlite.special whose pointwise bodies are
 * more than one expression (series, continued fractions, recurrences), shared by the C
 * and the CUDA kernels like the rest of ptl_common.h, which includes it.
 *
 * Each is written once in double precision; float32 (and float16/bfloat16, which compute
 * in float) round its result, so a float32 value is the float64 one rounded, where
 * PyTorch's float kernels carry float32 rounding through the series. Loops stop on
 * relative size (not a fixed count) and every input that would keep them from stopping
 * (nan, inf) is answered before the loop.
 *
 * Written for NVRTC too: no C library headers, no static tables (coefficients are locals),
 * no recursion (CUDA's forced inlining cannot take it).
 */
#ifndef PTL_SPECIAL_H
#define PTL_SPECIAL_H

#define PTL_SP_EPS 1.1102230246251565e-16   /* half the float64 epsilon (Cephes' MACHEP) */
#define PTL_SP_PI 3.14159265358979323846
#define PTL_SP_SQRT2 1.41421356237309504880
#define PTL_SP_SQRTPI 1.77245385090551602730
#define PTL_SP_SQRT2PI 2.50662827463100050242
#define PTL_SP_EULER 0.57721566490153286061

/* f32 from f64: the float32 function is the float64 one, rounded */
#define PTL_SP_F32_1(name) PTL_FN float ptl_##name##_f32(float x) { return (float)ptl_##name##_f64((double)x); }
#define PTL_SP_F32_2(name) \
    PTL_FN float ptl_##name##_f32(float a, float b) { return (float)ptl_##name##_f64((double)a, (double)b); }

/* ---- error-function family ----------------------------------------------------------- */

/* erfcx(x) = exp(x^2) erfc(x). Below 2 the product is exact enough (the relative error of
 * exp(x^2) grows with x^2); above, the Laplace continued fraction of erfc, evaluated from
 * the tail, which never forms the underflowing exp(-x^2). */
PTL_FN double ptl_erfcx_f64(double x) {
    if (x != x) return x;
    if (x < 2.0) return exp(x * x) * erfc(x);
    if (x > 1e8) return 1.0 / (PTL_SP_SQRTPI * x);
    double t = x;
    for (int k = 100; k > 0; k--) t = x + (0.5 * k) / t;
    return 1.0 / (PTL_SP_SQRTPI * t);
}
PTL_SP_F32_1(erfcx)

/* log of the standard normal CDF, as PyTorch: through erfcx in the left tail, where the
 * CDF itself underflows */
PTL_FN double ptl_log_ndtr_f64(double x) {
    double t = x * 0.70710678118654752440;
    if (x < -1.0) return log(ptl_erfcx_f64(-t) / 2.0) - t * t;
    return log1p(-erfc(t) / 2.0);
}
PTL_SP_F32_1(log_ndtr)

/* The inverse of the standard normal CDF for 0 < p <= 1/2: Acklam's rational guess
 * (relative error 1.2e-9) polished by two Halley steps on 0.5 erfc(-x / sqrt 2) - p,
 * which stays accurate in the tail. */
PTL_FN double ptl_sp_ndtri_lower(double p) {
    double x;
    if (p < 0.02425) {
        double q = sqrt(-2.0 * log(p));
        x = (((((-7.784894002430293e-03 * q - 3.223964580411365e-01) * q - 2.400758277161838e+00) * q
               - 2.549732539343734e+00) * q + 4.374664141464968e+00) * q + 2.938163982698783e+00)
            / ((((7.784695709041462e-03 * q + 3.224671290700398e-01) * q + 2.445134137142996e+00) * q
                + 3.754408661907416e+00) * q + 1.0);
    } else {
        double q = p - 0.5, r = q * q;
        x = (((((-3.969683028665376e+01 * r + 2.209460984245205e+02) * r - 2.759285104469687e+02) * r
               + 1.383577518672690e+02) * r - 3.066479806614716e+01) * r + 2.506628277459239e+00) * q
            / (((((-5.447609879822406e+01 * r + 1.615858368580409e+02) * r - 1.556989798598866e+02) * r
                 + 6.680131188771972e+01) * r - 1.328068155288572e+01) * r + 1.0);
    }
    for (int k = 0; k < 2; k++) {
        double e = 0.5 * erfc(-x * 0.70710678118654752440) - p;
        double u = e * PTL_SP_SQRT2PI * exp(0.5 * x * x);
        x = x - u / (1.0 + 0.5 * x * u);
    }
    return x;
}

PTL_FN double ptl_ndtri_f64(double p) {
    if (p != p || p < 0.0 || p > 1.0) return PTL_NAN_D;
    if (p == 0.0) return -PTL_INF_D;
    if (p == 1.0) return PTL_INF_D;
    /* 1 - p is exact for p >= 1/2 (Sterbenz), so the upper half mirrors the lower */
    return p <= 0.5 ? ptl_sp_ndtri_lower(p) : -ptl_sp_ndtri_lower(1.0 - p);
}
PTL_SP_F32_1(ndtri)

/* ---- zeta and polygamma ------------------------------------------------------------- */

/* The Hurwitz zeta function sum_k (k + q)^-x (Cephes' zeta: direct sum, then the
 * Euler-Maclaurin tail); PyTorch's domain: inf at x = 1, nan for x < 1, inf at the poles
 * q = 0, -1, ..., nan for other negative q unless x is an integer. */
PTL_FN double ptl_zeta_f64(double x, double q) {
    const double A[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
                          7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
                          -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18};
    if (x != x || q != q) return x + q;
    if (x == 1.0) return PTL_INF_D;
    if (x < 1.0) return PTL_NAN_D;
    if (q <= 0.0) {
        if (q == floor(q)) return PTL_INF_D;
        if (x != floor(x)) return PTL_NAN_D;
    }
    if (x == PTL_INF_D) return q == 1.0 ? 1.0 : (q < 1.0 ? PTL_INF_D : 0.0);
    double s = pow(q, -x), a = q, b = 0.0;
    int i = 0;
    while (i < 9 || a <= 9.0) {
        i += 1;
        a += 1.0;
        b = pow(a, -x);
        s += b;
        if (fabs(b / s) < PTL_SP_EPS) return s;
    }
    double w = a;
    s += b * w / (x - 1.0);
    s -= 0.5 * b;
    double f = 1.0, k = 0.0;
    for (i = 0; i < 12; i++) {
        f *= x + k;
        b /= w;
        double t = f * b / A[i];
        s = s + t;
        if (fabs(t / s) < PTL_SP_EPS) return s;
        k += 1.0;
        f *= x + k;
        b /= w;
        k += 1.0;
    }
    return s;
}
PTL_SP_F32_2(zeta)

/* polygamma of order n >= 1: (-1)^(n+1) n! zeta(n + 1, x) (order 0, digamma, is its own
 * operator: the body picks it) */
PTL_FN double ptl_polygamma_f64(double x, double n) {
    /* order 1 is PyTorch's trigamma, whose limits are 0 at inf and nan at -inf */
    if (n == 1.0 && (x == PTL_INF_D || x == -PTL_INF_D)) return x > 0.0 ? 0.0 : PTL_NAN_D;
    double sign = fmod(n, 2.0) == 0.0 ? -1.0 : 1.0;
    return sign * exp(lgamma(n + 1.0)) * ptl_zeta_f64(n + 1.0, x);
}
PTL_SP_F32_2(polygamma)

/* ---- incomplete gamma ---------------------------------------------------------------- */

/* the regularized lower incomplete gamma P(a, x) by its power series (x <= a or x <= 1) */
PTL_FN double ptl_sp_igam_series(double a, double x) {
    double ax = a * log(x) - x - lgamma(a);
    if (ax < -709.78271289338397) return 0.0;
    ax = exp(ax);
    double r = a, c = 1.0, ans = 1.0;
    do {
        r += 1.0;
        c *= x / r;
        ans += c;
    } while (c / ans > PTL_SP_EPS);
    return ans * ax / a;
}

/* the regularized upper incomplete gamma Q(a, x) by its continued fraction (x > a, x > 1) */
PTL_FN double ptl_sp_igamc_cf(double a, double x) {
    const double big = 4.503599627370496e15, biginv = 2.22044604925031308085e-16;
    double ax = a * log(x) - x - lgamma(a);
    if (ax < -709.78271289338397) return 0.0;
    ax = exp(ax);
    double y = 1.0 - a, z = x + y + 1.0, c = 0.0;
    double pkm2 = 1.0, qkm2 = x, pkm1 = x + 1.0, qkm1 = z * x;
    double ans = pkm1 / qkm1, t;
    do {
        c += 1.0;
        y += 1.0;
        z += 2.0;
        double yc = y * c, pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
        if (qk != 0.0) {
            double r = pk / qk;
            t = fabs((ans - r) / r);
            ans = r;
        } else {
            t = 1.0;
        }
        pkm2 = pkm1;
        pkm1 = pk;
        qkm2 = qkm1;
        qkm1 = qk;
        if (fabs(pk) > big) {
            pkm2 *= biginv;
            pkm1 *= biginv;
            qkm2 *= biginv;
            qkm1 *= biginv;
        }
    } while (t > PTL_SP_EPS);
    return ans * ax;
}

/* PyTorch's igamma (special.gammainc) and igammac (special.gammaincc), with its edge values:
 * its boundary tests come before any nan test, so a nan operand gives a boundary value
 * where the other one decides it (igamma(nan, 0) = 0, igamma(inf, nan) = 0,
 * igamma(nan, inf) = 1); a nan reaching the series or the fraction gives nan */
PTL_FN double ptl_igamma_f64(double a, double x) {
    if (a < 0.0 || x < 0.0) return PTL_NAN_D;
    if (a == 0.0) return x > 0.0 ? 1.0 : PTL_NAN_D;
    if (x == 0.0) return 0.0;
    if (a == PTL_INF_D) return x == PTL_INF_D ? PTL_NAN_D : 0.0;
    if (x == PTL_INF_D) return 1.0;
    if (a != a || x != x) return PTL_NAN_D;
    if (x > 1.0 && x > a) return 1.0 - ptl_sp_igamc_cf(a, x);
    return ptl_sp_igam_series(a, x);
}
PTL_SP_F32_2(igamma)

PTL_FN double ptl_igammac_f64(double a, double x) {
    if (a < 0.0 || x < 0.0) return PTL_NAN_D;
    if (a == 0.0) return x > 0.0 ? 0.0 : PTL_NAN_D;
    if (x == 0.0) return 1.0;
    if (a == PTL_INF_D) return x == PTL_INF_D ? PTL_NAN_D : 1.0;
    if (x == PTL_INF_D) return 0.0;
    if (a != a || x != x) return PTL_NAN_D;
    if (x < 1.0 || x < a) return 1.0 - ptl_sp_igam_series(a, x);
    return ptl_sp_igamc_cf(a, x);
}
PTL_SP_F32_2(igammac)

/* ---- modified Bessel functions of orders 0 and 1 -------------------------------------
 * I: the power series up to |x| = 30 (all terms positive, so no cancellation), the
 * asymptotic expansion beyond (its smallest term, about e^-2|x|, is below the rounding).
 * K: the series about 0 up to x = 2; beyond, Steed's continued fraction (Numerical
 * Recipes' CF2), which gives K0 and K1 together. `scaled` multiplies I by e^-|x| and K
 * by e^x without forming either exponential where it would overflow. */

PTL_FN double ptl_sp_bessel_i(double x, int order, int scaled) {
    if (x != x) return x;
    double ax = fabs(x), r;
    if (ax <= 30.0) {
        double y = 0.25 * ax * ax, t = order ? 0.5 * ax : 1.0, s = t;
        for (int k = 1; k < 500 && t > s * 1e-17; k++) {
            t *= y / (k * (double)(k + order));
            s += t;
        }
        r = scaled ? s * exp(-ax) : s;
    } else {
        double mu = order ? 4.0 : 0.0, c = 1.0, s = 1.0;
        for (int k = 1; k < 200; k++) {
            double c2 = -c * (mu - (2.0 * k - 1.0) * (2.0 * k - 1.0)) / (8.0 * k * ax);
            if (fabs(c2) >= fabs(c)) break;
            c = c2;
            s += c;
            if (fabs(c) < 1e-17 * fabs(s)) break;
        }
        s /= sqrt(2.0 * PTL_SP_PI * ax);
        if (scaled) {
            r = s;
        } else {   /* e^x overflows before I(x) does */
            double e = exp(0.5 * ax);
            r = e * (e * s);
        }
    }
    return (order && x < 0.0) ? -r : r;
}

/* Steed's continued fraction CF2 (Numerical Recipes' bessik) for x >= about 2 and
 * |nu| <= 1/2: K_nu(x) = sqrt(pi / (2x)) e^-x / s with s returned, and *h the quantity
 * that gives K_{nu+1}(x) = K_nu(x) (nu + x + 1/2 - h) / x. */
PTL_FN double ptl_sp_steed_cf2(double x, double nu, double *h_out) {
    double b = 2.0 * (1.0 + x), d = 1.0 / b, h = d, delh = d, q1 = 0.0, q2 = 1.0;
    double a1 = 0.25 - nu * nu, q = a1, c = a1, a = -a1, s = 1.0 + q * delh;
    for (int i = 2; i < 10000; i++) {
        a -= 2.0 * (i - 1);
        c = -a * c / i;
        double qnew = (q1 - b * q2) / a;
        q1 = q2;
        q2 = qnew;
        q += c * qnew;
        b += 2.0;
        d = 1.0 / (b + a * d);
        delh = (b * d - 1.0) * delh;
        h += delh;
        double dels = q * delh;
        s += dels;
        if (fabs(dels / s) < PTL_SP_EPS) break;
    }
    *h_out = a1 * h;
    return s;
}

PTL_FN double ptl_sp_bessel_k(double x, int order, int scaled) {
    if (x != x) return x;
    if (x < 0.0) return PTL_NAN_D;
    if (x == 0.0) return PTL_INF_D;
    if (x == PTL_INF_D) return 0.0;
    if (x <= 2.0) {
        double y = 0.25 * x * x, l = log(0.5 * x), t = 1.0, s = 0.0, r;
        if (order == 0) {
            double h = 0.0;
            for (int k = 1; k < 200; k++) {
                t *= y / ((double)k * k);
                h += 1.0 / k;
                s += t * h;
                if (t * h < 1e-17 * s) break;
            }
            r = -(l + PTL_SP_EULER) * ptl_sp_bessel_i(x, 0, 0) + s;
        } else {
            /* K1 = 1/x + ln(x/2) I1 - x/4 sum (psi(k+1) + psi(k+2)) (x^2/4)^k / (k! (k+1)!) */
            double p1 = -PTL_SP_EULER, p2 = 1.0 - PTL_SP_EULER;
            for (int k = 0; k < 200; k++) {
                double term = t * (p1 + p2);
                s += term;
                t *= y / ((k + 1.0) * (k + 2.0));
                p1 += 1.0 / (k + 1.0);
                p2 += 1.0 / (k + 2.0);
                if (k > 2 && fabs(term) < 1e-17 * fabs(s)) break;
            }
            r = 1.0 / x + l * ptl_sp_bessel_i(x, 1, 0) - 0.25 * x * s;
        }
        return scaled ? r * exp(x) : r;
    }
    double h, s = ptl_sp_steed_cf2(x, 0.0, &h);
    double k0 = sqrt(PTL_SP_PI / (2.0 * x)) / s;
    double r = order ? k0 * (x + 0.5 - h) / x : k0;
    return scaled ? r : r * exp(-x);
}

PTL_FN double ptl_i0_f64(double x) { return ptl_sp_bessel_i(x, 0, 0); }
PTL_FN double ptl_i0e_f64(double x) { return ptl_sp_bessel_i(x, 0, 1); }
PTL_FN double ptl_i1_f64(double x) { return ptl_sp_bessel_i(x, 1, 0); }
PTL_FN double ptl_i1e_f64(double x) { return ptl_sp_bessel_i(x, 1, 1); }
PTL_FN double ptl_k0_f64(double x) { return ptl_sp_bessel_k(x, 0, 0); }
PTL_FN double ptl_k0e_f64(double x) { return ptl_sp_bessel_k(x, 0, 1); }
PTL_FN double ptl_k1_f64(double x) { return ptl_sp_bessel_k(x, 1, 0); }
PTL_FN double ptl_k1e_f64(double x) { return ptl_sp_bessel_k(x, 1, 1); }
PTL_SP_F32_1(i0)
PTL_SP_F32_1(i0e)
PTL_SP_F32_1(i1)
PTL_SP_F32_1(i1e)
PTL_SP_F32_1(k0)
PTL_SP_F32_1(k0e)
PTL_SP_F32_1(k1)
PTL_SP_F32_1(k1e)

/* The Airy function Ai: its Maclaurin series on (-8, 1.65); beyond 1.65 (zeta >= 2)
 * sqrt(x / 3) / pi K_{1/3}(zeta), zeta = 2/3 x^(3/2), by the continued fraction; below -8
 * the oscillating asymptotic expansion (its smallest term, about e^-2zeta, is below the
 * rounding there). */
PTL_FN double ptl_airy_ai_f64(double x) {
    if (x != x) return x;
    if (ptl_isinf(x)) return PTL_NAN_D;   /* (PyTorch's, though the limit at +inf is 0) */
    if (x >= 1.65) {
        double z = (2.0 / 3.0) * x * sqrt(x), h;
        if (z > 745.0) return 0.0;
        double s = ptl_sp_steed_cf2(z, 1.0 / 3.0, &h);
        return sqrt(x / 3.0) / PTL_SP_PI * sqrt(PTL_SP_PI / (2.0 * z)) * exp(-z) / s;
    }
    if (x > -8.0) {
        double f = 1.0, g = x, tf = 1.0, tg = x, x3 = x * x * x;
        for (int k = 1; k < 200; k++) {
            tf *= x3 / ((3.0 * k - 1.0) * (3.0 * k));
            tg *= x3 / ((3.0 * k) * (3.0 * k + 1.0));
            f += tf;
            g += tg;
            if (fabs(tf) < 1e-17 * fabs(f) && fabs(tg) < 1e-17 * fabs(g)) break;
        }
        return 0.355028053887817239 * f - 0.258819403792806798 * g;
    }
    double t = -x, z = (2.0 / 3.0) * t * sqrt(t);
    double u = 1.0, p = 1.0, q = 0.0, zk = 1.0, last = 1.0;
    /* u_k = u_{k-1} (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k); even k go to p, odd to q, alternating */
    for (int k = 1; k < 60; k++) {
        u *= (6.0 * k - 5.0) * (6.0 * k - 3.0) * (6.0 * k - 1.0) / ((2.0 * k - 1.0) * 216.0 * k);
        zk *= z;
        double term = u / zk;
        if (term > last) break;
        last = term;
        int j = k / 2;
        double sgn = (j % 2) ? -1.0 : 1.0;
        if (k % 2) q += sgn * term;
        else p += sgn * term;
        if (term < 1e-17) break;
    }
    double ph = z + 0.25 * PTL_SP_PI;
    return (sin(ph) * p - cos(ph) * q) / (PTL_SP_SQRTPI * sqrt(sqrt(t)));
}
PTL_SP_F32_1(airy_ai)

/* ---- Bessel functions of the first and second kind: the C library's (and CUDA's) ------ */

/* (at +-inf PyTorch gives nan, where the limit 0 is what the C library says) */
PTL_FN double ptl_bessel_j0_f64(double x) { return ptl_isinf(x) ? PTL_NAN_D : j0(x); }
PTL_FN double ptl_bessel_j1_f64(double x) { return ptl_isinf(x) ? PTL_NAN_D : j1(x); }
PTL_FN double ptl_bessel_y0_f64(double x) {
    return (x < 0.0 || ptl_isinf(x)) ? PTL_NAN_D : (x == 0.0 ? -PTL_INF_D : y0(x));
}
PTL_FN double ptl_bessel_y1_f64(double x) {
    return (x < 0.0 || ptl_isinf(x)) ? PTL_NAN_D : (x == 0.0 ? -PTL_INF_D : y1(x));
}
PTL_SP_F32_1(bessel_j0)
PTL_SP_F32_1(bessel_j1)
PTL_SP_F32_1(bessel_y0)
PTL_SP_F32_1(bessel_y1)

/* sin(x) / x, by its series near 0 where the quotient loses digits */
PTL_FN double ptl_spherical_bessel_j0_f64(double x) {
    if (x == PTL_INF_D || x == -PTL_INF_D) return 0.0;
    if (fabs(x) < 0.5) {
        double z = x * x;
        return 1.0 + z * (-1.0 / 6 + z * (1.0 / 120 + z * (-1.0 / 5040 + z * (1.0 / 362880
               + z * (-1.0 / 39916800 + z * (1.0 / 6227020800.0))))));
    }
    return sin(x) / x;
}
PTL_SP_F32_1(spherical_bessel_j0)

/* ---- orthogonal polynomials: p(x, n), n truncated to an integer, as PyTorch ------------
 * (n < 0 gives 0; the three-term recurrences, with PyTorch's closed forms at |x| = 1 and,
 * for the Chebyshev kinds at large n inside (-1, 1), through acos) */

PTL_FN double ptl_sp_chebyshev(double x, double nf, int kind) {
    if (nf != nf || x != x) return PTL_NAN_D;
    if (nf < 0.0) return 0.0;
    long long n = (long long)nf;
    int even = (n % 2) == 0;
    double m = (double)n;
    if (fabs(x) == 1.0) {
        if (kind == 0) return (x > 0 || even) ? 1.0 : -1.0;
        if (kind == 1) return (x > 0 || even) ? m + 1.0 : -(m + 1.0);
        if (kind == 2) return x > 0 ? 1.0 : (even ? m + m + 1.0 : -(m + m + 1.0));
        return x > 0 ? m + m + 1.0 : (even ? 1.0 : -1.0);
    }
    if (fabs(x) < 1.0 && n > (kind == 0 ? 6 : 8)) {
        double t = acos(x);
        if (kind == 0) return cos(m * t);
        if (kind == 1) return sin((m + 1.0) * t) / sin(t);
        if (kind == 2) return cos((m + 0.5) * t) / cos(0.5 * t);
        return sin((m + 0.5) * t) / sin(0.5 * t);
    }
    if (n == 0) return 1.0;
    double p = 1.0, q = kind == 0 ? x : (kind == 1 ? x + x : (kind == 2 ? x + x - 1.0 : x + x + 1.0));
    for (long long k = 2; k <= n; k++) {
        double r = (x + x) * q - p;
        p = q;
        q = r;
    }
    return q;
}

PTL_FN double ptl_chebyshev_t_f64(double x, double n) { return ptl_sp_chebyshev(x, n, 0); }
PTL_FN double ptl_chebyshev_u_f64(double x, double n) { return ptl_sp_chebyshev(x, n, 1); }
PTL_FN double ptl_chebyshev_v_f64(double x, double n) { return ptl_sp_chebyshev(x, n, 2); }
PTL_FN double ptl_chebyshev_w_f64(double x, double n) { return ptl_sp_chebyshev(x, n, 3); }
PTL_FN double ptl_shifted_chebyshev_t_f64(double x, double n) { return ptl_sp_chebyshev(x + x - 1.0, n, 0); }
PTL_FN double ptl_shifted_chebyshev_u_f64(double x, double n) { return ptl_sp_chebyshev(x + x - 1.0, n, 1); }
PTL_FN double ptl_shifted_chebyshev_v_f64(double x, double n) { return ptl_sp_chebyshev(x + x - 1.0, n, 2); }
PTL_FN double ptl_shifted_chebyshev_w_f64(double x, double n) { return ptl_sp_chebyshev(x + x - 1.0, n, 3); }

/* physicists' (H: scale 2) and probabilists' (He: scale 1) Hermite polynomials */
PTL_FN double ptl_sp_hermite(double x, double nf, double scale) {
    if (nf != nf || x != x) return PTL_NAN_D;
    if (nf < 0.0) return 0.0;
    long long n = (long long)nf;
    if (n == 0) return 1.0;
    double p = 1.0, q = scale * x;
    for (long long k = 1; k < n; k++) {
        double r = scale * x * q - scale * (double)k * p;
        p = q;
        q = r;
    }
    return q;
}
PTL_FN double ptl_hermite_h_f64(double x, double n) { return ptl_sp_hermite(x, n, 2.0); }
PTL_FN double ptl_hermite_he_f64(double x, double n) { return ptl_sp_hermite(x, n, 1.0); }

PTL_FN double ptl_laguerre_l_f64(double x, double nf) {
    if (nf != nf || x != x) return PTL_NAN_D;
    if (nf < 0.0) return 0.0;
    long long n = (long long)nf;
    if (x == 0.0 || n == 0) return 1.0;
    double p = 1.0, q = 1.0 - x;
    for (long long k = 1; k < n; k++) {
        double r = ((2.0 * k + 1.0 - x) * q - (double)k * p) / (k + 1.0);
        p = q;
        q = r;
    }
    return q;
}

PTL_FN double ptl_legendre_p_f64(double x, double nf) {
    if (nf != nf || x != x) return PTL_NAN_D;
    if (nf < 0.0) return 0.0;
    long long n = (long long)nf;
    if (fabs(x) == 1.0) return (x > 0 || n % 2 == 0) ? 1.0 : -1.0;
    if (n == 0) return 1.0;
    double p = 1.0, q = x;
    for (long long k = 1; k < n; k++) {
        double r = ((2.0 * k + 1.0) * x * q - (double)k * p) / (k + 1.0);
        p = q;
        q = r;
    }
    return q;
}

PTL_SP_F32_2(chebyshev_t)
PTL_SP_F32_2(chebyshev_u)
PTL_SP_F32_2(chebyshev_v)
PTL_SP_F32_2(chebyshev_w)
PTL_SP_F32_2(shifted_chebyshev_t)
PTL_SP_F32_2(shifted_chebyshev_u)
PTL_SP_F32_2(shifted_chebyshev_v)
PTL_SP_F32_2(shifted_chebyshev_w)
PTL_SP_F32_2(hermite_h)
PTL_SP_F32_2(hermite_he)
PTL_SP_F32_2(laguerre_l)
PTL_SP_F32_2(legendre_p)

/* ---- small ones: entr, sinc, xlog1py -------------------------------------------------- */

/* -x log x, 0 at 0, -inf below (nan stays nan) */
PTL_FN double ptl_entr_f64(double x) {
    if (x != x) return x;
    if (x > 0.0) return -x * log(x);
    return x == 0.0 ? 0.0 : -PTL_INF_D;
}
PTL_SP_F32_1(entr)

/* sin(pi x) / (pi x), 1 at 0 */
PTL_FN double ptl_sinc_f64(double x) {
    if (x == 0.0) return 1.0;
    double px = PTL_SP_PI * x;
    return sin(px) / px;
}
PTL_SP_F32_1(sinc)

/* x log1p(y), 0 where x is 0 unless y is nan */
PTL_FN double ptl_xlog1py_f64(double x, double y) {
    if (y != y) return y;
    return x == 0.0 ? 0.0 : x * log1p(y);
}
PTL_SP_F32_2(xlog1py)

#endif
