#include "knossos.h"
#include "prelude.h"
#include "ksbind-edefs.h"

namespace ks {

typedef ks::Tuple<ks::Float,ks::Tuple<>> ty$suffwdpass$to_float$ai;
KS_DEF ty$suffwdpass$to_float$ai suffwdpass$to_float$ai(ks::allocator * $alloc, ks::Integer x) {
  ks::Float c$0 = to_float$ai($alloc, x);
  return (ks::make_Tuple(c$0,ks::make_Tuple()));
}

typedef ks::Tuple<ks::Integer,ks::Tuple<>> ty$suffwdpass$add$aii;
KS_DEF ty$suffwdpass$add$aii suffwdpass$add$aii(ks::allocator * $alloc, ks::Integer x_yarg1, ks::Integer x_yarg2) {
  ks::Tuple<ks::Integer,ks::Integer> x_y = ks::make_Tuple(x_yarg1,x_yarg2);
  ks::Integer c$0 = add$aii($alloc, ks::get<0>(x_y), ks::get<1>(x_y));
  return (ks::make_Tuple(c$0,ks::make_Tuple()));
}

typedef ks::Tuple<ks::Tuple<>,ks::Tuple<>> ty$sufrevpass$add$aii;
KS_DEF ty$sufrevpass$add$aii sufrevpass$add$aii(ks::allocator * $alloc, ks::Tuple<> d_dadd, ks::Tuple<> bog) {
  return (ks::make_Tuple(ks::make_Tuple(),ks::make_Tuple()));
}

typedef ks::Tuple<ks::Integer,ks::Tuple<>> ty$suffwdpass$sub$aii;
KS_DEF ty$suffwdpass$sub$aii suffwdpass$sub$aii(ks::allocator * $alloc, ks::Integer x_yarg1, ks::Integer x_yarg2) {
  ks::Tuple<ks::Integer,ks::Integer> x_y = ks::make_Tuple(x_yarg1,x_yarg2);
  ks::Integer c$0 = sub$aii($alloc, ks::get<0>(x_y), ks::get<1>(x_y));
  return (ks::make_Tuple(c$0,ks::make_Tuple()));
}

typedef ks::Tuple<ks::Tuple<>,ks::Tuple<>> ty$sufrevpass$sub$aii;
KS_DEF ty$sufrevpass$sub$aii sufrevpass$sub$aii(ks::allocator * $alloc, ks::Tuple<> d_dsub, ks::Tuple<> bog) {
  return (ks::make_Tuple(ks::make_Tuple(),ks::make_Tuple()));
}

typedef ks::Tuple<ks::Integer,ks::Tuple<>> ty$suffwdpass$mul$aii;
KS_DEF ty$suffwdpass$mul$aii suffwdpass$mul$aii(ks::allocator * $alloc, ks::Integer x_yarg1, ks::Integer x_yarg2) {
  ks::Tuple<ks::Integer,ks::Integer> x_y = ks::make_Tuple(x_yarg1,x_yarg2);
  ks::Integer c$0 = mul$aii($alloc, ks::get<0>(x_y), ks::get<1>(x_y));
  return (ks::make_Tuple(c$0,ks::make_Tuple()));
}

typedef ks::Tuple<ks::Tuple<>,ks::Tuple<>> ty$sufrevpass$mul$aii;
KS_DEF ty$sufrevpass$mul$aii sufrevpass$mul$aii(ks::allocator * $alloc, ks::Tuple<> d_dmul, ks::Tuple<> bog) {
  return (ks::make_Tuple(ks::make_Tuple(),ks::make_Tuple()));
}

typedef ks::Tuple<ks::Integer,ks::Tuple<>> ty$suffwdpass$div$aii;
KS_DEF ty$suffwdpass$div$aii suffwdpass$div$aii(ks::allocator * $alloc, ks::Integer x_yarg1, ks::Integer x_yarg2) {
  ks::Tuple<ks::Integer,ks::Integer> x_y = ks::make_Tuple(x_yarg1,x_yarg2);
  ks::Integer c$0 = div$aii($alloc, ks::get<0>(x_y), ks::get<1>(x_y));
  return (ks::make_Tuple(c$0,ks::make_Tuple()));
}

typedef ks::Tuple<ks::Tuple<>,ks::Tuple<>> ty$sufrevpass$div$aii;
KS_DEF ty$sufrevpass$div$aii sufrevpass$div$aii(ks::allocator * $alloc, ks::Tuple<> d_ddiv, ks::Tuple<> xt) {
  return (ks::make_Tuple(ks::make_Tuple(),ks::make_Tuple()));
}

typedef ks::Float ty$rev$log$af;
KS_DEF ty$rev$log$af rev$log$af(ks::allocator * $alloc, ks::Float x, ks::Float d_dlog) {
  ks::Float c$0 = div$aff($alloc, d_dlog, x);
  return (c$0);
}

typedef ks::Tuple<ks::Float,ks::Float> ty$suffwdpass$log$af;
KS_DEF ty$suffwdpass$log$af suffwdpass$log$af(ks::allocator * $alloc, ks::Float x) {
  ks::Float c$0 = log$af($alloc, x);
  return (ks::make_Tuple(c$0,x));
}

typedef ty$rev$log$af ty$sufrevpass$log$af;
KS_DEF ty$sufrevpass$log$af sufrevpass$log$af(ks::allocator * $alloc, ks::Float d_dlog, ks::Float x) {
  ty$rev$log$af c$0 = rev$log$af($alloc, x, d_dlog);
  return (c$0);
}

typedef ks::Tuple<ks::Float,ks::Float> ty$suffwdpass$exp$af;
KS_DEF ty$suffwdpass$exp$af suffwdpass$exp$af(ks::allocator * $alloc, ks::Float x) {
  ks::Float c$0 = exp$af($alloc, x);
  ks::Float exp_x = c$0;
  return (ks::make_Tuple(exp_x,exp_x));
}

typedef ks::Float ty$sufrevpass$exp$af;
KS_DEF ty$sufrevpass$exp$af sufrevpass$exp$af(ks::allocator * $alloc, ks::Float d_dexp, ks::Float exp_x) {
  ks::Float c$0 = mul$aff($alloc, exp_x, d_dexp);
  return (c$0);
}

typedef ks::Tuple<ks::Float,ks::Tuple<ks::Integer,ks::Integer>> ty$suffwdpass$max$aT1f;
KS_DEF ty$suffwdpass$max$aT1f suffwdpass$max$aT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> x) {
  ks::Float c$0 = max$aT1f($alloc, x);
  ks::Integer c$1 = imax$aT1f($alloc, x);
  ks::Integer c$2 = size(x);
  return (ks::make_Tuple(c$0,ks::make_Tuple(c$1,c$2)));
}

typedef ks::tensor<1, ks::Float> ty$sufrevpass$max$aT1f;
KS_DEF ty$sufrevpass$max$aT1f sufrevpass$max$aT1f(ks::allocator * $alloc, ks::Float d_dr, ks::Tuple<ks::Integer,ks::Integer> imax_x_size_x) {
  ks::Tuple<ks::Integer,ks::Integer> c$1 = imax_x_size_x;
  auto imax_x = ks::get<0>(c$1);
  auto size_x = ks::get<1>(c$1);
  ks::tensor<1, ks::Float> c$0 = deltaVec($alloc, size_x, imax_x, d_dr);
  return (c$0);
}

typedef ks::Tuple<ks::Float,ks::Float> ty$suffwdpass$lgamma$af;
KS_DEF ty$suffwdpass$lgamma$af suffwdpass$lgamma$af(ks::allocator * $alloc, ks::Float x) {
  ks::Float c$0 = lgamma$af($alloc, x);
  return (ks::make_Tuple(c$0,x));
}

typedef ks::Integer ty$tril_slot$aiii;
KS_DEF ty$tril_slot$aiii tril_slot$aiii(ks::allocator * $alloc, ks::Integer d, ks::Integer row, ks::Integer col) {
  ks::Integer c$0 = mul$aii($alloc, 2, d);
  ks::Integer c$1 = sub$aii($alloc, c$0, col);
  ks::Integer c$2 = sub$aii($alloc, c$1, 1);
  ks::Integer c$3 = mul$aii($alloc, col, c$2);
  ks::Integer c$4 = div$aii($alloc, c$3, 2);
  ks::Integer c$5 = sub$aii($alloc, row, col);
  ks::Integer c$6 = sub$aii($alloc, c$5, 1);
  ks::Integer c$7 = add$aii($alloc, c$4, c$6);
  return (c$7);
}

typedef ks::Float ty$qmat_entry$aT1fT1fii;
KS_DEF ty$qmat_entry$aT1fT1fii qmat_entry$aT1fT1fii(ks::allocator * $alloc, ks::tensor<1, ks::Float> q, ks::tensor<1, ks::Float> l, ks::Integer row, ks::Integer col) {
  ks::Bool c$1 = eq(row, col);
  ks::Float c$0;
  if (c$1) {
    ks::Float c$2 = index(row, q);
    ks::Float c$3 = exp$af($alloc, c$2);
    c$0 = (c$3);
  } else {
    ks::Integer c$4 = size(q);
    ty$tril_slot$aiii c$5 = tril_slot$aiii($alloc, c$4, row, col);
    ks::Float c$6 = index(c$5, l);
    c$0 = (c$6);
  }
  return (c$0);
}

typedef ks::Float ty$qform$aT1fT1fT1f;
KS_DEF ty$qform$aT1fT1fT1f qform$aT1fT1fT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> q, ks::tensor<1, ks::Float> l, ks::tensor<1, ks::Float> v) {
  ks::Integer c$0 = size(v);
  /* Lam */auto c$1 = [=](ks::allocator * $alloc, ks::Integer r) {
    ks::Integer c$2 = add$aii($alloc, r, 1);
    /* Lam */auto c$3 = [=](ks::allocator * $alloc, ks::Integer c) {
      ty$qmat_entry$aT1fT1fii c$4 = qmat_entry$aT1fT1fii($alloc, q, l, r, c);
      ks::Float c$5 = index(c, v);
      ks::Float c$6 = mul$aff($alloc, c$4, c$5);
      return (c$6);
    };
    ks::Float c$7 = sumbuild<ks::Float>($alloc, c$2, c$3);
    ks::Float qv_r = c$7;
    ks::Float c$8 = mul$aff($alloc, qv_r, qv_r);
    return (c$8);
  };
  ks::Float c$10 = sumbuild<ks::Float>($alloc, c$0, c$1);
  return (c$10);
}

typedef ks::tensor<1, ks::Float> ty$vec_sub$aT1fT1f;
KS_DEF ty$vec_sub$aT1fT1f vec_sub$aT1fT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> a, ks::tensor<1, ks::Float> b) {
  ks::Integer c$0 = size(a);
  /* Lam */auto c$1 = [=](ks::allocator * $alloc, ks::Integer j) {
    ks::Float c$2 = index(j, a);
    ks::Float c$3 = index(j, b);
    ks::Float c$4 = sub$aff($alloc, c$2, c$3);
    return (c$4);
  };
  ks::tensor<1, ks::Float> c$5 = build<ks::Float>($alloc, c$0, c$1);
  return (c$5);
}

typedef ks::Float ty$vec_total$aT1f;
KS_DEF ty$vec_total$aT1f vec_total$aT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> v) {
  ks::Integer c$0 = size(v);
  /* Lam */auto c$1 = [=](ks::allocator * $alloc, ks::Integer j) {
    ks::Float c$2 = index(j, v);
    return (c$2);
  };
  ks::Float c$3 = sumbuild<ks::Float>($alloc, c$0, c$1);
  return (c$3);
}

typedef ks::Float ty$log_sum_exp$aT1f;
KS_DEF ty$log_sum_exp$aT1f log_sum_exp$aT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> v) {
  ks::Float c$0 = max$aT1f($alloc, v);
  ks::Float top = c$0;
  ks::Integer c$1 = size(v);
  /* Lam */auto c$2 = [=](ks::allocator * $alloc, ks::Integer k) {
    ks::Float c$3 = index(k, v);
    ks::Float c$4 = sub$aff($alloc, c$3, top);
    ks::Float c$5 = exp$af($alloc, c$4);
    return (c$5);
  };
  ks::Float c$6 = sumbuild<ks::Float>($alloc, c$1, c$2);
  ks::Float c$7 = log$af($alloc, c$6);
  ks::Float c$8 = add$aff($alloc, top, c$7);
  return (c$8);
}

typedef ks::Float ty$log_multigamma$afi;
KS_DEF ty$log_multigamma$afi log_multigamma$afi(ks::allocator * $alloc, ks::Float a, ks::Integer p) {
  ks::Float c$0 = log$af($alloc, Float(3.141592653589793));
  ks::Float c$1 = mul$aff($alloc, Float(0.25), c$0);
  ks::Integer c$2 = sub$aii($alloc, p, 1);
  ks::Integer c$3 = mul$aii($alloc, p, c$2);
  ks::Float c$4 = to_float$ai($alloc, c$3);
  ks::Float c$5 = mul$aff($alloc, c$1, c$4);
  /* Lam */auto c$6 = [=](ks::allocator * $alloc, ks::Integer j) {
    ks::Float c$7 = to_float$ai($alloc, j);
    ks::Float c$8 = mul$aff($alloc, Float(0.5), c$7);
    ks::Float c$9 = sub$aff($alloc, a, c$8);
    ks::Float c$10 = lgamma$af($alloc, c$9);
    return (c$10);
  };
  ks::Float c$11 = sumbuild<ks::Float>($alloc, p, c$6);
  ks::Float c$12 = add$aff($alloc, c$5, c$11);
  return (c$12);
}

typedef ks::Float ty$wishart_term$a$dfi$bT1fT1f;
KS_DEF ty$wishart_term$a$dfi$bT1fT1f wishart_term$a$dfi$bT1fT1f(ks::allocator * $alloc, ks::Tuple<ks::Float,ks::Integer> wishart, ks::tensor<1, ks::Float> q, ks::tensor<1, ks::Float> l) {
  ks::Tuple<ks::Float,ks::Integer> c$36 = wishart;
  auto gamma = ks::get<0>(c$36);
  auto m = ks::get<1>(c$36);
  ks::Integer c$0 = size(q);
  ks::Integer p = c$0;
  ks::Integer c$1 = add$aii($alloc, m, 1);
  ks::Integer c$2 = add$aii($alloc, p, c$1);
  ks::Integer n = c$2;
  ks::Float c$3 = mul$aff($alloc, gamma, gamma);
  ks::Float c$4 = mul$aff($alloc, Float(0.5), c$3);
  /* Lam */auto c$5 = [=](ks::allocator * $alloc, ks::Integer j) {
    ks::Float c$6 = index(j, q);
    ks::Float c$7 = mul$aff($alloc, Float(2.0), c$6);
    ks::Float c$8 = exp$af($alloc, c$7);
    return (c$8);
  };
  ks::Float c$9 = sumbuild<ks::Float>($alloc, p, c$5);
  ks::Integer c$10 = size(l);
  /* Lam */auto c$11 = [=](ks::allocator * $alloc, ks::Integer j) {
    ks::Float c$12 = index(j, l);
    ks::Float lj = c$12;
    ks::Float c$13 = mul$aff($alloc, lj, lj);
    return (c$13);
  };
  ks::Float c$15 = sumbuild<ks::Float>($alloc, c$10, c$11);
  ks::Float c$16 = add$aff($alloc, c$9, c$15);
  ks::Float c$17 = mul$aff($alloc, c$4, c$16);
  ks::Float c$18 = to_float$ai($alloc, m);
  ty$vec_total$aT1f c$19 = vec_total$aT1f($alloc, q);
  ks::Float c$20 = mul$aff($alloc, c$18, c$19);
  ks::Float c$21 = sub$aff($alloc, c$17, c$20);
  ks::Integer c$22 = mul$aii($alloc, n, p);
  ks::Float c$23 = to_float$ai($alloc, c$22);
  ks::Float c$24 = log$af($alloc, gamma);
  ks::Float c$25 = log$af($alloc, Float(2.0));
  ks::Float c$26 = mul$aff($alloc, Float(0.5), c$25);
  ks::Float c$27 = sub$aff($alloc, c$24, c$26);
  ks::Float c$28 = mul$aff($alloc, c$23, c$27);
  ks::Float c$29 = to_float$ai($alloc, n);
  ks::Float c$30 = mul$aff($alloc, Float(0.5), c$29);
  ty$log_multigamma$afi c$31 = log_multigamma$afi($alloc, c$30, p);
  ks::Float c$32 = sub$aff($alloc, c$28, c$31);
  ks::Float c$33 = sub$aff($alloc, c$21, c$32);
  return (c$33);
}

typedef ks::Float ty$component_score$afT1fT1fT1fT1f;
KS_DEF ty$component_score$afT1fT1fT1fT1f component_score$afT1fT1fT1fT1f(ks::allocator * $alloc, ks::Float alpha, ks::tensor<1, ks::Float> mu, ks::tensor<1, ks::Float> q, ks::tensor<1, ks::Float> l, ks::tensor<1, ks::Float> xi) {
  ty$vec_total$aT1f c$0 = vec_total$aT1f($alloc, q);
  ks::Float c$1 = add$aff($alloc, alpha, c$0);
  KS_MARK($alloc, c$4);
  ty$vec_sub$aT1fT1f c$2 = vec_sub$aT1fT1f($alloc, xi, mu);
  ty$qform$aT1fT1fT1f c$3 = qform$aT1fT1fT1f($alloc, q, l, c$2);
  KS_RESET($alloc, c$4);
  ks::Float c$5 = mul$aff($alloc, Float(0.5), c$3);
  ks::Float c$6 = sub$aff($alloc, c$1, c$5);
  return (c$6);
}

typedef ks::Float ty$gmm_objective$aT1T1fT1fT1T1fT1T1fT1T1f$dfi$b;
KS_DEF ty$gmm_objective$aT1T1fT1fT1T1fT1T1fT1T1f$dfi$b gmm_objective$aT1T1fT1fT1T1fT1T1fT1T1f$dfi$b(ks::allocator * $alloc, ks::tensor<1, ks::tensor<1, ks::Float>> x, ks::tensor<1, ks::Float> alphas, ks::tensor<1, ks::tensor<1, ks::Float>> means, ks::tensor<1, ks::tensor<1, ks::Float>> qs, ks::tensor<1, ks::tensor<1, ks::Float>> ls, ks::Tuple<ks::Float,ks::Integer> wishart) {
  ks::Integer c$0 = size(x);
  ks::Integer n = c$0;
  ks::Integer c$1 = size(alphas);
  ks::Integer k = c$1;
  ks::tensor<1, ks::Float> c$2 = index(0, means);
  ks::Integer c$3 = size(c$2);
  ks::Integer d = c$3;
  {
    ks::tensor<1, ks::Float> c$4 = index(0, ls);
    ks::Integer c$5 = size(c$4);
    ks::Integer c$6 = sub$aii($alloc, d, 1);
    ks::Integer c$7 = mul$aii($alloc, d, c$6);
    ks::Integer c$8 = div$aii($alloc, c$7, 2);
    ks::Bool c$9 = eq(c$5, c$8);
    KS_ASSERT(c$9);
  }
  /* Lam */auto c$10 = [=](ks::allocator * $alloc, ks::Integer i) {
    KS_MARK($alloc, c$20);
    /* Lam */auto c$11 = [=](ks::allocator * $alloc, ks::Integer c) {
      ks::Float c$12 = index(c, alphas);
      ks::tensor<1, ks::Float> c$13 = index(c, means);
      ks::tensor<1, ks::Float> c$14 = index(c, qs);
      ks::tensor<1, ks::Float> c$15 = index(c, ls);
      ks::tensor<1, ks::Float> c$16 = index(i, x);
      ty$component_score$afT1fT1fT1fT1f c$17 = component_score$afT1fT1fT1fT1f($alloc, c$12, c$13, c$14, c$15, c$16);
      return (c$17);
    };
    ks::tensor<1, ks::Float> c$18 = build<ks::Float>($alloc, k, c$11);
    ty$log_sum_exp$aT1f c$19 = log_sum_exp$aT1f($alloc, c$18);
    KS_RESET($alloc, c$20);
    return (c$19);
  };
  ks::Float c$21 = sumbuild<ks::Float>($alloc, n, c$10);
  ks::Integer c$22 = mul$aii($alloc, n, d);
  ks::Float c$23 = to_float$ai($alloc, c$22);
  ks::Float c$24 = mul$aff($alloc, c$23, Float(0.9189385332046727));
  ks::Float c$25 = sub$aff($alloc, c$21, c$24);
  ks::Float c$26 = to_float$ai($alloc, n);
  ty$log_sum_exp$aT1f c$27 = log_sum_exp$aT1f($alloc, alphas);
  ks::Float c$28 = mul$aff($alloc, c$26, c$27);
  ks::Float c$29 = sub$aff($alloc, c$25, c$28);
  /* Lam */auto c$30 = [=](ks::allocator * $alloc, ks::Integer c) {
    ks::tensor<1, ks::Float> c$31 = index(c, qs);
    ks::tensor<1, ks::Float> c$32 = index(c, ls);
    ty$wishart_term$a$dfi$bT1fT1f c$33 = wishart_term$a$dfi$bT1fT1f($alloc, wishart, c$31, c$32);
    return (c$33);
  };
  ks::Float c$34 = sumbuild<ks::Float>($alloc, k, c$30);
  ks::Float c$35 = add$aff($alloc, c$29, c$34);
  return (c$35);
}

typedef ks::Tuple<ks::Integer,ks::Tuple<>> ty$suffwdpass$tril_slot$aiii;
KS_DEF ty$suffwdpass$tril_slot$aiii suffwdpass$tril_slot$aiii(ks::allocator * $alloc, ks::Integer d, ks::Integer row, ks::Integer col_6) {
  ty$suffwdpass$mul$aii c$0 = suffwdpass$mul$aii($alloc, 2, d);
  ty$suffwdpass$mul$aii c$15 = c$0;
  auto r_37 = ks::get<0>(c$15);
  auto b_f_38 = ks::get<1>(c$15);
  ty$suffwdpass$sub$aii c$1 = suffwdpass$sub$aii($alloc, r_37, col_6);
  ty$suffwdpass$sub$aii c$14 = c$1;
  auto r_33 = ks::get<0>(c$14);
  auto b_f_34 = ks::get<1>(c$14);
  ty$suffwdpass$sub$aii c$2 = suffwdpass$sub$aii($alloc, r_33, 1);
  ty$suffwdpass$sub$aii c$13 = c$2;
  auto r_16 = ks::get<0>(c$13);
  auto b_f_17 = ks::get<1>(c$13);
  ty$suffwdpass$mul$aii c$3 = suffwdpass$mul$aii($alloc, col_6, r_16);
  ty$suffwdpass$mul$aii c$12 = c$3;
  auto r_19 = ks::get<0>(c$12);
  auto b_f_20 = ks::get<1>(c$12);
  ty$suffwdpass$div$aii c$4 = suffwdpass$div$aii($alloc, r_19, 2);
  ty$suffwdpass$div$aii c$11 = c$4;
  auto r_20 = ks::get<0>(c$11);
  auto b_f_21 = ks::get<1>(c$11);
  ty$suffwdpass$sub$aii c$5 = suffwdpass$sub$aii($alloc, row, col_6);
  ty$suffwdpass$sub$aii c$10 = c$5;
  auto r_21 = ks::get<0>(c$10);
  auto b_f_22 = ks::get<1>(c$10);
  ty$suffwdpass$sub$aii c$6 = suffwdpass$sub$aii($alloc, r_21, 1);
  ty$suffwdpass$sub$aii c$9 = c$6;
  auto r_23 = ks::get<0>(c$9);
  auto b_f_24 = ks::get<1>(c$9);
  ty$suffwdpass$add$aii c$7 = suffwdpass$add$aii($alloc, r_20, r_23);
  ty$suffwdpass$add$aii c$8 = c$7;
  auto r = ks::get<0>(c$8);
  auto b_f = ks::get<1>(c$8);
  return (ks::make_Tuple(r,ks::make_Tuple()));
}

typedef ks::Tuple<ks::Tuple<>,ks::Tuple<>,ks::Tuple<>> ty$sufrevpass$tril_slot$aiii;
KS_DEF ty$sufrevpass$tril_slot$aiii sufrevpass$tril_slot$aiii(ks::allocator * $alloc, ks::Tuple<> dt_arg, ks::Tuple<> bog_arg) {
  ty$sufrevpass$add$aii c$0 = sufrevpass$add$aii($alloc, dt_arg, ks::make_Tuple());
  ty$sufrevpass$add$aii c$15 = c$0;
  auto d$t = ks::get<0>(c$15);
  auto d$t_13 = ks::get<1>(c$15);
  ty$sufrevpass$div$aii c$1 = sufrevpass$div$aii($alloc, d$t, ks::make_Tuple());
  ty$sufrevpass$div$aii c$14 = c$1;
  auto d$t_18 = ks::get<0>(c$14);
  auto d$t_20 = ks::get<1>(c$14);
  ty$sufrevpass$mul$aii c$2 = sufrevpass$mul$aii($alloc, d$t_18, ks::make_Tuple());
  ty$sufrevpass$mul$aii c$13 = c$2;
  auto d$t_27 = ks::get<0>(c$13);
  auto d$t_29 = ks::get<1>(c$13);
  ty$sufrevpass$sub$aii c$3 = sufrevpass$sub$aii($alloc, d$t_29, ks::make_Tuple());
  ty$sufrevpass$sub$aii c$12 = c$3;
  auto d$t_35 = ks::get<0>(c$12);
  auto d$t_37 = ks::get<1>(c$12);
  ty$sufrevpass$sub$aii c$4 = sufrevpass$sub$aii($alloc, d$t_35, ks::make_Tuple());
  ty$sufrevpass$sub$aii c$11 = c$4;
  auto d$t_42 = ks::get<0>(c$11);
  auto d$t_44 = ks::get<1>(c$11);
  ty$sufrevpass$mul$aii c$5 = sufrevpass$mul$aii($alloc, d$t_42, ks::make_Tuple());
  ty$sufrevpass$mul$aii c$10 = c$5;
  auto d$t_49 = ks::get<0>(c$10);
  auto d$t_51 = ks::get<1>(c$10);
  ty$sufrevpass$sub$aii c$6 = sufrevpass$sub$aii($alloc, d$t_13, ks::make_Tuple());
  ty$sufrevpass$sub$aii c$9 = c$6;
  auto d$t_61 = ks::get<0>(c$9);
  auto d$t_63 = ks::get<1>(c$9);
  ty$sufrevpass$sub$aii c$7 = sufrevpass$sub$aii($alloc, d$t_61, ks::make_Tuple());
  ty$sufrevpass$sub$aii c$8 = c$7;
  auto d$t_68 = ks::get<0>(c$8);
  auto d$t_70 = ks::get<1>(c$8);
  return (ks::make_Tuple(d$t_51,d$t_68,ks::make_Tuple()));
}

typedef ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>> ty$suffwdpass$qmat_entry$aT1fT1fii;
KS_DEF ty$suffwdpass$qmat_entry$aT1fT1fii suffwdpass$qmat_entry$aT1fT1fii(ks::allocator * $alloc, ks::tensor<1, ks::Float> q_8, ks::tensor<1, ks::Float> l, ks::Integer row_11, ks::Integer col_10) {
  ks::Bool c$1 = eq(row_11, col_10);
  ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>> c$0;
  if (c$1) {
    ks::Float c$2 = index(row_11, q_8);
    ty$suffwdpass$exp$af c$3 = suffwdpass$exp$af($alloc, c$2);
    ty$suffwdpass$exp$af c$7 = c$3;
    auto r_18 = ks::get<0>(c$7);
    auto b_f_19 = ks::get<1>(c$7);
    ks::Integer c$4 = size(l);
    ks::Integer c$5 = size(q_8);
    ks::tensor<1, ks::Float> c$6 = constVec($alloc, c$5, Float(0.0));
    c$0 = (ks::make_Tuple(r_18,ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(),ks::make_Tuple()),true,ks::make_Tuple(c$4,ks::make_Tuple(ks::make_Tuple(row_11,c$6),b_f_19)),ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>{})));
  } else {
    ks::Integer c$8 = size(q_8);
    ks::Integer t$2750 = c$8;
    ty$suffwdpass$tril_slot$aiii c$9 = suffwdpass$tril_slot$aiii($alloc, t$2750, row_11, col_10);
    ty$suffwdpass$tril_slot$aiii c$14 = c$9;
    auto r_36 = ks::get<0>(c$14);
    auto b_f_37 = ks::get<1>(c$14);
    ks::Float c$10 = index(r_36, l);
    ks::tensor<1, ks::Float> c$11 = constVec($alloc, t$2750, Float(0.0));
    ks::Integer c$12 = size(l);
    ks::tensor<1, ks::Float> c$13 = constVec($alloc, c$12, Float(0.0));
    c$0 = (ks::make_Tuple(c$10,ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(),ks::make_Tuple()),false,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>{},ks::make_Tuple(c$11,ks::make_Tuple(r_36,c$13)))));
  }
  ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>> c$16 = c$0;
  auto body_10 = ks::get<0>(c$16);
  auto b_body_13 = ks::get<1>(c$16);
  return (ks::make_Tuple(body_10,b_body_13));
}

typedef ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>,ks::Tuple<>,ks::Tuple<>> ty$sufrevpass$qmat_entry$aT1fT1fii;
KS_DEF ty$sufrevpass$qmat_entry$aT1fT1fii sufrevpass$qmat_entry$aT1fT1fii(ks::allocator * $alloc, ks::Float dt_arg, ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>> bog_arg) {
  ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>> c$27 = bog_arg;
  auto bcond = ks::get<0>(c$27);
  auto cond = ks::get<1>(c$27);
  auto bt = ks::get<2>(c$27);
  auto bf = ks::get<3>(c$27);
  ks::Tuple<ks::Tuple<>,ks::Tuple<>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> c$0;
  if (cond) {
    ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>> c$13 = bt;
    auto b_rhs_18 = ks::get<0>(c$13);
    auto b_body_19 = ks::get<1>(c$13);
    ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float> c$12 = b_body_19;
    auto be = ks::get<0>(c$12);
    auto bf_23 = ks::get<1>(c$12);
    ks::tensor<1, ks::Float> c$1 = ks::get<1>(be);
    ks::tensor<1, ks::Float> t$2766 = c$1;
    ks::tensor<1, ks::Float> c$2 = constVec($alloc, b_rhs_18, Float(0.0));
    ks::Integer c$3 = size(t$2766);
    /* Lam */auto c$4 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
      ks::Integer c$6 = ks::get<0>(be);
      ks::Bool c$7 = eq(primDindex$i, c$6);
      ks::Float c$5;
      if (c$7) {
        ty$sufrevpass$exp$af c$8 = sufrevpass$exp$af($alloc, dt_arg, bf_23);
        c$5 = (c$8);
      } else {
        ks::Float c$9 = index(primDindex$i, t$2766);
        c$5 = (c$9);
      }
      return (c$5);
    };
    ks::tensor<1, ks::Float> c$10 = build<ks::Float>($alloc, c$3, c$4);
    c$0 = (ks::make_Tuple(ks::make_Tuple(),ks::make_Tuple(),c$2,c$10));
  } else {
    ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>> c$25 = bf;
    auto be = ks::get<0>(c$25);
    auto bf_19 = ks::get<1>(c$25);
    ty$sufrevpass$tril_slot$aiii c$14 = sufrevpass$tril_slot$aiii($alloc, ks::make_Tuple(), ks::make_Tuple());
    ty$sufrevpass$tril_slot$aiii c$24 = c$14;
    auto d$t_29 = ks::get<0>(c$24);
    auto d$t_31 = ks::get<1>(c$24);
    auto d$t_33 = ks::get<2>(c$24);
    ks::tensor<1, ks::Float> c$15 = ks::get<1>(bf_19);
    ks::tensor<1, ks::Float> t$2772 = c$15;
    ks::Integer c$16 = size(t$2772);
    /* Lam */auto c$17 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
      ks::Integer c$19 = ks::get<0>(bf_19);
      ks::Bool c$20 = eq(primDindex$i, c$19);
      ks::Float c$18;
      if (c$20) {
        c$18 = (dt_arg);
      } else {
        ks::Float c$21 = index(primDindex$i, t$2772);
        c$18 = (c$21);
      }
      return (c$18);
    };
    ks::tensor<1, ks::Float> c$22 = build<ks::Float>($alloc, c$16, c$17);
    c$0 = (ks::make_Tuple(d$t_33,d$t_31,c$22,be));
  }
  ks::Tuple<ks::Tuple<>,ks::Tuple<>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> c$26 = c$0;
  auto d$col_6 = ks::get<0>(c$26);
  auto d$row_9 = ks::get<1>(c$26);
  auto d$l = ks::get<2>(c$26);
  auto d$q_8 = ks::get<3>(c$26);
  return (ks::make_Tuple(d$q_8,d$l,ks::make_Tuple(),ks::make_Tuple()));
}

typedef ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>> ty$suffwdpass$qform$aT1fT1fT1f;
KS_DEF ty$suffwdpass$qform$aT1fT1fT1f suffwdpass$qform$aT1fT1fT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> q, ks::tensor<1, ks::Float> l, ks::tensor<1, ks::Float> v_13) {
  ks::Integer c$0 = size(v_13);
  ks::Integer r_19 = c$0;
  /* Lam */auto c$1 = [=](ks::allocator * $alloc, ks::Integer r_9) {
    ty$suffwdpass$add$aii c$2 = suffwdpass$add$aii($alloc, r_9, 1);
    ty$suffwdpass$add$aii c$17 = c$2;
    auto r_37 = ks::get<0>(c$17);
    auto b_f_38 = ks::get<1>(c$17);
    /* Lam */auto c$3 = [=](ks::allocator * $alloc, ks::Integer c_8) {
      ty$suffwdpass$qmat_entry$aT1fT1fii c$4 = suffwdpass$qmat_entry$aT1fT1fii($alloc, q, l, r_9, c_8);
      ty$suffwdpass$qmat_entry$aT1fT1fii c$9 = c$4;
      auto r_21 = ks::get<0>(c$9);
      auto b_f_22 = ks::get<1>(c$9);
      ks::Float c$5 = index(c_8, v_13);
      ks::Float r_23 = c$5;
      ks::Float c$6 = mul$aff($alloc, r_21, r_23);
      ks::tensor<1, ks::Float> c$7 = constVec($alloc, r_19, Float(0.0));
      return (ks::make_Tuple(c$6,ks::make_Tuple(ks::make_Tuple(b_f_22,ks::make_Tuple(c_8,c$7)),ks::make_Tuple(r_21,r_23))));
    };
    ks::tensor<1, ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>> c$10 = build<ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>($alloc, r_37, c$3);
    ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>> c$11 = unzip($alloc, c$10);
    ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>> c$16 = c$11;
    auto r_32 = ks::get<0>(c$16);
    auto ba_34 = ks::get<1>(c$16);
    ks::Float c$12 = sum($alloc, r_32);
    ks::Float r_24 = c$12;
    ks::Float c$13 = mul$aff($alloc, r_24, r_24);
    ks::Integer c$14 = size(r_32);
    return (ks::make_Tuple(c$13,ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(r_37,ks::make_Tuple(),ba_34),c$14),ks::make_Tuple(r_24,r_24))));
  };
  ks::tensor<1, ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>> c$18 = build<ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>($alloc, r_19, c$1);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>> c$19 = unzip($alloc, c$18);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>> c$23 = c$19;
  auto r_14 = ks::get<0>(c$23);
  auto ba = ks::get<1>(c$23);
  ks::Float c$20 = sum($alloc, r_14);
  ks::tensor<1, ks::Float> c$21 = constVec($alloc, r_19, Float(0.0));
  ks::Integer c$22 = size(r_14);
  return (ks::make_Tuple(c$20,ks::make_Tuple(ks::make_Tuple(r_19,c$21,ba),c$22)));
}

typedef ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> ty$sufrevpass$qform$aT1fT1fT1f;
KS_DEF ty$sufrevpass$qform$aT1fT1fT1f sufrevpass$qform$aT1fT1fT1f(ks::allocator * $alloc, ks::Float dt_arg, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer> bog_arg) {
  ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer> c$42 = bog_arg;
  auto be = ks::get<0>(c$42);
  auto bf = ks::get<1>(c$42);
  ks::tensor<1, ks::Float> c$0 = constVec($alloc, bf, dt_arg);
  ks::tensor<1, ks::Float> d$a = c$0;
  ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>> c$40 = be;
  auto n = ks::get<0>(c$40);
  auto bn = ks::get<1>(c$40);
  auto ba = ks::get<2>(c$40);
  /* Lam */auto c$1 = [=](ks::allocator * $alloc, ks::Integer r_9) {
    ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>> c$2 = index(r_9, ba);
    ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>> c$36 = c$2;
    auto b_rhs_17 = ks::get<0>(c$36);
    auto b_body_18 = ks::get<1>(c$36);
    ks::Float c$3 = index(r_9, d$a);
    ks::Float d_dmul = c$3;
    ks::Tuple<ks::Float,ks::Float> c$34 = b_body_18;
    auto x = ks::get<0>(c$34);
    auto y = ks::get<1>(c$34);
    ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer> c$33 = b_rhs_17;
    auto be_34 = ks::get<0>(c$33);
    auto bf_35 = ks::get<1>(c$33);
    ks::Float c$4 = mul$aff($alloc, y, d_dmul);
    ks::Float c$5 = mul$aff($alloc, x, d_dmul);
    ks::Float c$6 = ts_add($alloc, c$4, c$5);
    ks::tensor<1, ks::Float> c$7 = constVec($alloc, bf_35, c$6);
    ks::tensor<1, ks::Float> d$a_36 = c$7;
    ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>> c$31 = be_34;
    auto n_39 = ks::get<0>(c$31);
    auto bn_41 = ks::get<1>(c$31);
    auto ba_40 = ks::get<2>(c$31);
    /* Lam */auto c$8 = [=](ks::allocator * $alloc, ks::Integer c_8) {
      ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>> c$9 = index(c_8, ba_40);
      ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>> c$28 = c$9;
      auto be_50 = ks::get<0>(c$28);
      auto bf_51 = ks::get<1>(c$28);
      ks::Float c$10 = index(c_8, d$a_36);
      ks::Float d_dmul_23 = c$10;
      ks::Tuple<ks::Float,ks::Float> c$26 = bf_51;
      auto x_24 = ks::get<0>(c$26);
      auto y_25 = ks::get<1>(c$26);
      ks::Float c$11 = mul$aff($alloc, x_24, d_dmul_23);
      ks::Float d$t_58 = c$11;
      ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>> c$24 = be_50;
      auto b_55 = ks::get<0>(c$24);
      auto b_57 = ks::get<1>(c$24);
      ks::Float c$12 = mul$aff($alloc, y_25, d_dmul_23);
      ty$sufrevpass$qmat_entry$aT1fT1fii c$13 = sufrevpass$qmat_entry$aT1fT1fii($alloc, c$12, b_55);
      ty$sufrevpass$qmat_entry$aT1fT1fii c$23 = c$13;
      auto d$t_63 = ks::get<0>(c$23);
      auto d$t_65 = ks::get<1>(c$23);
      auto d$t_67 = ks::get<2>(c$23);
      auto d$t_69 = ks::get<3>(c$23);
      ks::tensor<1, ks::Float> c$14 = ks::get<1>(b_57);
      ks::tensor<1, ks::Float> t$2804 = c$14;
      ks::Integer c$15 = size(t$2804);
      /* Lam */auto c$16 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
        ks::Integer c$18 = ks::get<0>(b_57);
        ks::Bool c$19 = eq(primDindex$i, c$18);
        ks::Float c$17;
        if (c$19) {
          c$17 = (d$t_58);
        } else {
          ks::Float c$20 = index(primDindex$i, t$2804);
          c$17 = (c$20);
        }
        return (c$17);
      };
      ks::tensor<1, ks::Float> c$21 = build<ks::Float>($alloc, c$15, c$16);
      return (ks::make_Tuple(d$t_67,d$t_65,d$t_63,c$21));
    };
    ks::Tuple<ks::Tuple<>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> c$29 = sumbuild<ks::Tuple<ks::Tuple<>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>>>($alloc, n_39, c$8);
    ks::Tuple<ks::Tuple<>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> c$30 = c$29;
    auto d$r_4 = ks::get<0>(c$30);
    auto d$l = ks::get<1>(c$30);
    auto d$q = ks::get<2>(c$30);
    auto d$v_7 = ks::get<3>(c$30);
    return (ks::make_Tuple(d$l,d$q,d$v_7));
  };
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> c$37 = sumbuild<ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>>>($alloc, n, c$1);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> c$39 = c$37;
  auto d$l = ks::get<0>(c$39);
  auto d$q = ks::get<1>(c$39);
  auto d$v_7 = ks::get<2>(c$39);
  ks::tensor<1, ks::Float> c$38 = ts_add($alloc, bn, d$v_7);
  return (ks::make_Tuple(d$q,d$l,c$38));
}

typedef ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>> ty$suffwdpass$vec_sub$aT1fT1f;
KS_DEF ty$suffwdpass$vec_sub$aT1fT1f suffwdpass$vec_sub$aT1fT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> a_6, ks::tensor<1, ks::Float> b) {
  ks::Integer c$0 = size(a_6);
  ks::Integer r_14 = c$0;
  /* Lam */auto c$1 = [=](ks::allocator * $alloc, ks::Integer j_5) {
    ks::Float c$2 = index(j_5, a_6);
    ks::Float c$3 = index(j_5, b);
    ks::Float c$4 = sub$aff($alloc, c$2, c$3);
    ks::tensor<1, ks::Float> c$5 = constVec($alloc, r_14, Float(0.0));
    ks::Integer c$6 = size(b);
    ks::tensor<1, ks::Float> c$7 = constVec($alloc, c$6, Float(0.0));
    return (ks::make_Tuple(c$4,ks::make_Tuple(ks::make_Tuple(j_5,c$5),ks::make_Tuple(j_5,c$7))));
  };
  ks::tensor<1, ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>> c$8 = build<ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>($alloc, r_14, c$1);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>> c$9 = unzip($alloc, c$8);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>> c$11 = c$9;
  auto r_8 = ks::get<0>(c$11);
  auto ba = ks::get<1>(c$11);
  ks::tensor<1, ks::Float> c$10 = constVec($alloc, r_14, Float(0.0));
  return (ks::make_Tuple(r_8,ks::make_Tuple(r_14,c$10,ba)));
}

typedef ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> ty$sufrevpass$vec_sub$aT1fT1f;
KS_DEF ty$sufrevpass$vec_sub$aT1fT1f sufrevpass$vec_sub$aT1fT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> dt_arg, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>> bog_arg) {
  ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>> c$28 = bog_arg;
  auto n = ks::get<0>(c$28);
  auto bn = ks::get<1>(c$28);
  auto ba = ks::get<2>(c$28);
  /* Lam */auto c$0 = [=](ks::allocator * $alloc, ks::Integer j_5) {
    ks::Float c$1 = index(j_5, dt_arg);
    ks::Float d_dsub = c$1;
    ks::Float c$2 = neg$af($alloc, d_dsub);
    ks::Float d$t_20 = c$2;
    ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>> c$3 = index(j_5, ba);
    ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>> c$22 = c$3;
    auto b = ks::get<0>(c$22);
    auto b_19 = ks::get<1>(c$22);
    ks::tensor<1, ks::Float> c$4 = ks::get<1>(b);
    ks::tensor<1, ks::Float> t$2823 = c$4;
    ks::tensor<1, ks::Float> c$5 = ks::get<1>(b_19);
    ks::tensor<1, ks::Float> t$2827 = c$5;
    ks::Integer c$6 = size(t$2823);
    /* Lam */auto c$7 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
      ks::Integer c$9 = ks::get<0>(b);
      ks::Bool c$10 = eq(primDindex$i, c$9);
      ks::Float c$8;
      if (c$10) {
        c$8 = (d_dsub);
      } else {
        ks::Float c$11 = index(primDindex$i, t$2823);
        c$8 = (c$11);
      }
      return (c$8);
    };
    ks::tensor<1, ks::Float> c$12 = build<ks::Float>($alloc, c$6, c$7);
    ks::Integer c$13 = size(t$2827);
    /* Lam */auto c$14 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
      ks::Integer c$16 = ks::get<0>(b_19);
      ks::Bool c$17 = eq(primDindex$i, c$16);
      ks::Float c$15;
      if (c$17) {
        c$15 = (d$t_20);
      } else {
        ks::Float c$18 = index(primDindex$i, t$2827);
        c$15 = (c$18);
      }
      return (c$15);
    };
    ks::tensor<1, ks::Float> c$19 = build<ks::Float>($alloc, c$13, c$14);
    return (ks::make_Tuple(c$12,c$19));
  };
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> c$25 = sumbuild<ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>>>($alloc, n, c$0);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> c$27 = c$25;
  auto d$a_2 = ks::get<0>(c$27);
  auto d$b = ks::get<1>(c$27);
  ks::tensor<1, ks::Float> c$26 = ts_add($alloc, bn, d$a_2);
  return (ks::make_Tuple(c$26,d$b));
}

typedef ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>> ty$suffwdpass$vec_total$aT1f;
KS_DEF ty$suffwdpass$vec_total$aT1f suffwdpass$vec_total$aT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> v_3) {
  ks::Integer c$0 = size(v_3);
  ks::Integer r_17 = c$0;
  /* Lam */auto c$1 = [=](ks::allocator * $alloc, ks::Integer j) {
    ks::Float c$2 = index(j, v_3);
    ks::tensor<1, ks::Float> c$3 = constVec($alloc, r_17, Float(0.0));
    return (ks::make_Tuple(c$2,ks::make_Tuple(j,c$3)));
  };
  ks::tensor<1, ks::Tuple<ks::Float,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>> c$4 = build<ks::Tuple<ks::Float,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>($alloc, r_17, c$1);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>> c$5 = unzip($alloc, c$4);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>> c$9 = c$5;
  auto r_12 = ks::get<0>(c$9);
  auto ba = ks::get<1>(c$9);
  ks::Float c$6 = sum($alloc, r_12);
  ks::tensor<1, ks::Float> c$7 = constVec($alloc, r_17, Float(0.0));
  ks::Integer c$8 = size(r_12);
  return (ks::make_Tuple(c$6,ks::make_Tuple(ks::make_Tuple(r_17,c$7,ba),c$8)));
}

typedef ks::tensor<1, ks::Float> ty$sufrevpass$vec_total$aT1f;
KS_DEF ty$sufrevpass$vec_total$aT1f sufrevpass$vec_total$aT1f(ks::allocator * $alloc, ks::Float dt_arg, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer> bog_arg) {
  ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer> c$18 = bog_arg;
  auto be = ks::get<0>(c$18);
  auto bf = ks::get<1>(c$18);
  ks::tensor<1, ks::Float> c$0 = constVec($alloc, bf, dt_arg);
  ks::tensor<1, ks::Float> d$a = c$0;
  ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>> c$16 = be;
  auto n = ks::get<0>(c$16);
  auto bn = ks::get<1>(c$16);
  auto ba = ks::get<2>(c$16);
  /* Lam */auto c$1 = [=](ks::allocator * $alloc, ks::Integer j) {
    ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>> c$2 = index(j, ba);
    ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>> t$2843 = c$2;
    ks::tensor<1, ks::Float> c$3 = ks::get<1>(t$2843);
    ks::tensor<1, ks::Float> t$2844 = c$3;
    ks::Integer c$4 = size(t$2844);
    /* Lam */auto c$5 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
      ks::Integer c$7 = ks::get<0>(t$2843);
      ks::Bool c$8 = eq(primDindex$i, c$7);
      ks::Float c$6;
      if (c$8) {
        ks::Float c$9 = index(j, d$a);
        c$6 = (c$9);
      } else {
        ks::Float c$10 = index(primDindex$i, t$2844);
        c$6 = (c$10);
      }
      return (c$6);
    };
    ks::tensor<1, ks::Float> c$11 = build<ks::Float>($alloc, c$4, c$5);
    return (c$11);
  };
  ks::tensor<1, ks::Float> c$14 = sumbuild<ks::tensor<1, ks::Float>>($alloc, n, c$1);
  ks::tensor<1, ks::Float> c$15 = ts_add($alloc, bn, c$14);
  return (c$15);
}

typedef ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>,ks::Integer>,ks::Float>>> ty$suffwdpass$log_sum_exp$aT1f;
KS_DEF ty$suffwdpass$log_sum_exp$aT1f suffwdpass$log_sum_exp$aT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> v_8) {
  ty$suffwdpass$max$aT1f c$0 = suffwdpass$max$aT1f($alloc, v_8);
  ty$suffwdpass$max$aT1f c$18 = c$0;
  auto r_5 = ks::get<0>(c$18);
  auto b_f_6 = ks::get<1>(c$18);
  ks::Integer c$1 = size(v_8);
  ks::Integer r_42 = c$1;
  /* Lam */auto c$2 = [=](ks::allocator * $alloc, ks::Integer k) {
    ks::Float c$3 = index(k, v_8);
    ks::Float c$4 = sub$aff($alloc, c$3, r_5);
    ty$suffwdpass$exp$af c$5 = suffwdpass$exp$af($alloc, c$4);
    ty$suffwdpass$exp$af c$7 = c$5;
    auto r_22 = ks::get<0>(c$7);
    auto b_f_23 = ks::get<1>(c$7);
    ks::tensor<1, ks::Float> c$6 = constVec($alloc, r_42, Float(0.0));
    return (ks::make_Tuple(r_22,ks::make_Tuple(ks::make_Tuple(k,c$6),b_f_23)));
  };
  ks::tensor<1, ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>> c$8 = build<ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>($alloc, r_42, c$2);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>> c$9 = unzip($alloc, c$8);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>> c$16 = c$9;
  auto r_37 = ks::get<0>(c$16);
  auto ba = ks::get<1>(c$16);
  ks::Float c$10 = sum($alloc, r_37);
  ty$suffwdpass$log$af c$11 = suffwdpass$log$af($alloc, c$10);
  ty$suffwdpass$log$af c$15 = c$11;
  auto r_21 = ks::get<0>(c$15);
  auto b_f_22 = ks::get<1>(c$15);
  ks::Float c$12 = add$aff($alloc, r_5, r_21);
  ks::tensor<1, ks::Float> c$13 = constVec($alloc, r_42, Float(0.0));
  ks::Integer c$14 = size(r_37);
  return (ks::make_Tuple(c$12,ks::make_Tuple(b_f_6,ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(r_42,c$13,ba),c$14),b_f_22))));
}

typedef ks::tensor<1, ks::Float> ty$sufrevpass$log_sum_exp$aT1f;
KS_DEF ty$sufrevpass$log_sum_exp$aT1f sufrevpass$log_sum_exp$aT1f(ks::allocator * $alloc, ks::Float dt_arg, ks::Tuple<ks::Tuple<ks::Integer,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>,ks::Integer>,ks::Float>> bog_arg) {
  ks::Tuple<ks::Tuple<ks::Integer,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>,ks::Integer>,ks::Float>> c$28 = bog_arg;
  auto b_rhs_5 = ks::get<0>(c$28);
  auto b_body_6 = ks::get<1>(c$28);
  ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>,ks::Integer>,ks::Float> c$27 = b_body_6;
  auto be_17 = ks::get<0>(c$27);
  auto bf_18 = ks::get<1>(c$27);
  ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>,ks::Integer> c$26 = be_17;
  auto be_20 = ks::get<0>(c$26);
  auto bf_21 = ks::get<1>(c$26);
  ty$sufrevpass$log$af c$0 = sufrevpass$log$af($alloc, dt_arg, bf_18);
  ks::tensor<1, ks::Float> c$1 = constVec($alloc, bf_21, c$0);
  ks::tensor<1, ks::Float> d$a_22 = c$1;
  ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>> c$24 = be_20;
  auto n = ks::get<0>(c$24);
  auto bn = ks::get<1>(c$24);
  auto ba = ks::get<2>(c$24);
  /* Lam */auto c$2 = [=](ks::allocator * $alloc, ks::Integer k) {
    ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float> c$3 = index(k, ba);
    ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float> c$17 = c$3;
    auto be_32 = ks::get<0>(c$17);
    auto bf_33 = ks::get<1>(c$17);
    ks::Float c$4 = index(k, d$a_22);
    ty$sufrevpass$exp$af c$5 = sufrevpass$exp$af($alloc, c$4, bf_33);
    ty$sufrevpass$exp$af d_dsub = c$5;
    ks::tensor<1, ks::Float> c$6 = ks::get<1>(be_32);
    ks::tensor<1, ks::Float> t$2868 = c$6;
    ks::Float c$7 = neg$af($alloc, d_dsub);
    ks::Integer c$8 = size(t$2868);
    /* Lam */auto c$9 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
      ks::Integer c$11 = ks::get<0>(be_32);
      ks::Bool c$12 = eq(primDindex$i, c$11);
      ks::Float c$10;
      if (c$12) {
        c$10 = (d_dsub);
      } else {
        ks::Float c$13 = index(primDindex$i, t$2868);
        c$10 = (c$13);
      }
      return (c$10);
    };
    ks::tensor<1, ks::Float> c$14 = build<ks::Float>($alloc, c$8, c$9);
    return (ks::make_Tuple(c$7,c$14));
  };
  ks::Tuple<ks::Float,ks::tensor<1, ks::Float>> c$18 = sumbuild<ks::Tuple<ks::Float,ks::tensor<1, ks::Float>>>($alloc, n, c$2);
  ks::Tuple<ks::Float,ks::tensor<1, ks::Float>> c$23 = c$18;
  auto d$top_5 = ks::get<0>(c$23);
  auto d$v_4 = ks::get<1>(c$23);
  ks::tensor<1, ks::Float> c$19 = ts_add($alloc, bn, d$v_4);
  ks::Float c$20 = ts_add($alloc, dt_arg, d$top_5);
  ty$sufrevpass$max$aT1f c$21 = sufrevpass$max$aT1f($alloc, c$20, b_rhs_5);
  ks::tensor<1, ks::Float> c$22 = ts_add($alloc, c$19, c$21);
  return (c$22);
}

typedef ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>> ty$suffwdpass$log_multigamma$afi;
KS_DEF ty$suffwdpass$log_multigamma$afi suffwdpass$log_multigamma$afi(ks::allocator * $alloc, ks::Float a, ks::Integer p_6) {
  ty$suffwdpass$log$af c$0 = suffwdpass$log$af($alloc, Float(3.141592653589793));
  ty$suffwdpass$log$af c$23 = c$0;
  auto r_22 = ks::get<0>(c$23);
  auto b_f_23 = ks::get<1>(c$23);
  ks::Float c$1 = mul$aff($alloc, Float(0.25), r_22);
  ks::Float r_18 = c$1;
  ty$suffwdpass$sub$aii c$2 = suffwdpass$sub$aii($alloc, p_6, 1);
  ty$suffwdpass$sub$aii c$21 = c$2;
  auto r_15 = ks::get<0>(c$21);
  auto b_f_16 = ks::get<1>(c$21);
  ty$suffwdpass$mul$aii c$3 = suffwdpass$mul$aii($alloc, p_6, r_15);
  ty$suffwdpass$mul$aii c$20 = c$3;
  auto r_16 = ks::get<0>(c$20);
  auto b_f_17 = ks::get<1>(c$20);
  ty$suffwdpass$to_float$ai c$4 = suffwdpass$to_float$ai($alloc, r_16);
  ty$suffwdpass$to_float$ai c$19 = c$4;
  auto r_19 = ks::get<0>(c$19);
  auto b_f_20 = ks::get<1>(c$19);
  /* Lam */auto c$5 = [=](ks::allocator * $alloc, ks::Integer j) {
    ty$suffwdpass$to_float$ai c$6 = suffwdpass$to_float$ai($alloc, j);
    ty$suffwdpass$to_float$ai c$11 = c$6;
    auto r_34 = ks::get<0>(c$11);
    auto b_f_35 = ks::get<1>(c$11);
    ks::Float c$7 = mul$aff($alloc, Float(0.5), r_34);
    ks::Float c$8 = sub$aff($alloc, a, c$7);
    ty$suffwdpass$lgamma$af c$9 = suffwdpass$lgamma$af($alloc, c$8);
    ty$suffwdpass$lgamma$af c$10 = c$9;
    auto r_29 = ks::get<0>(c$10);
    auto b_f_30 = ks::get<1>(c$10);
    return (ks::make_Tuple(r_29,ks::make_Tuple(ks::make_Tuple(Float(0.5),r_34),b_f_30)));
  };
  ks::tensor<1, ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>> c$12 = build<ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>($alloc, p_6, c$5);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>> c$13 = unzip($alloc, c$12);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>> c$18 = c$13;
  auto r_17 = ks::get<0>(c$18);
  auto ba = ks::get<1>(c$18);
  ks::Float c$14 = mul$aff($alloc, r_18, r_19);
  ks::Float c$15 = sum($alloc, r_17);
  ks::Float c$16 = add$aff($alloc, c$14, c$15);
  ks::Integer c$17 = size(r_17);
  return (ks::make_Tuple(c$16,ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(b_f_23,ks::make_Tuple(Float(0.25),r_22)),ks::make_Tuple(r_18,r_19)),ks::make_Tuple(ks::make_Tuple(p_6,ks::make_Tuple(),ba),c$17))));
}

typedef ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>> ty$suffwdpass$component_score$afT1fT1fT1fT1f;
KS_DEF ty$suffwdpass$component_score$afT1fT1fT1fT1f suffwdpass$component_score$afT1fT1fT1fT1f(ks::allocator * $alloc, ks::Float alpha, ks::tensor<1, ks::Float> mu, ks::tensor<1, ks::Float> q_6, ks::tensor<1, ks::Float> l, ks::tensor<1, ks::Float> xi) {
  ty$suffwdpass$vec_total$aT1f c$0 = suffwdpass$vec_total$aT1f($alloc, q_6);
  ty$suffwdpass$vec_total$aT1f c$8 = c$0;
  auto r_21 = ks::get<0>(c$8);
  auto b_f_22 = ks::get<1>(c$8);
  ty$suffwdpass$vec_sub$aT1fT1f c$1 = suffwdpass$vec_sub$aT1fT1f($alloc, xi, mu);
  ty$suffwdpass$vec_sub$aT1fT1f c$7 = c$1;
  auto r_25 = ks::get<0>(c$7);
  auto b_f_26 = ks::get<1>(c$7);
  ty$suffwdpass$qform$aT1fT1fT1f c$2 = suffwdpass$qform$aT1fT1fT1f($alloc, q_6, l, r_25);
  ty$suffwdpass$qform$aT1fT1fT1f c$6 = c$2;
  auto r_15 = ks::get<0>(c$6);
  auto b_f_16 = ks::get<1>(c$6);
  ks::Float c$3 = add$aff($alloc, alpha, r_21);
  ks::Float c$4 = mul$aff($alloc, Float(0.5), r_15);
  ks::Float c$5 = sub$aff($alloc, c$3, c$4);
  return (ks::make_Tuple(c$5,ks::make_Tuple(b_f_22,ks::make_Tuple(ks::make_Tuple(b_f_26,b_f_16),ks::make_Tuple(Float(0.5),r_15)))));
}

typedef ks::Tuple<ks::Float,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> ty$sufrevpass$component_score$afT1fT1fT1fT1f;
KS_DEF ty$sufrevpass$component_score$afT1fT1fT1fT1f sufrevpass$component_score$afT1fT1fT1fT1f(ks::allocator * $alloc, ks::Float dt_arg, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>> bog_arg) {
  ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>> c$11 = bog_arg;
  auto b = ks::get<0>(c$11);
  auto b_14 = ks::get<1>(c$11);
  ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>> c$10 = b_14;
  auto be_27 = ks::get<0>(c$10);
  auto bf_28 = ks::get<1>(c$10);
  ks::Tuple<ks::Float,ks::Float> c$9 = bf_28;
  auto x = ks::get<0>(c$9);
  auto y = ks::get<1>(c$9);
  ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>> c$8 = be_27;
  auto be_34 = ks::get<0>(c$8);
  auto bf_35 = ks::get<1>(c$8);
  ks::Float c$0 = neg$af($alloc, dt_arg);
  ks::Float c$1 = mul$aff($alloc, x, c$0);
  ty$sufrevpass$qform$aT1fT1fT1f c$2 = sufrevpass$qform$aT1fT1fT1f($alloc, c$1, bf_35);
  ty$sufrevpass$qform$aT1fT1fT1f c$7 = c$2;
  auto d$t_38 = ks::get<0>(c$7);
  auto d$t_40 = ks::get<1>(c$7);
  auto d$t_42 = ks::get<2>(c$7);
  ty$sufrevpass$vec_sub$aT1fT1f c$3 = sufrevpass$vec_sub$aT1fT1f($alloc, d$t_42, be_34);
  ty$sufrevpass$vec_sub$aT1fT1f c$6 = c$3;
  auto d$t_48 = ks::get<0>(c$6);
  auto d$t_50 = ks::get<1>(c$6);
  ty$sufrevpass$vec_total$aT1f c$4 = sufrevpass$vec_total$aT1f($alloc, dt_arg, b);
  ks::tensor<1, ks::Float> c$5 = ts_add($alloc, c$4, d$t_38);
  return (ks::make_Tuple(dt_arg,d$t_50,c$5,d$t_40,d$t_48));
}

typedef ks::Tuple<ks::Float,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>>>> ty$suffwdpass$wishart_term$a$dfi$bT1fT1f;
KS_DEF ty$suffwdpass$wishart_term$a$dfi$bT1fT1f suffwdpass$wishart_term$a$dfi$bT1fT1f(ks::allocator * $alloc, ks::Tuple<ks::Float,ks::Integer> wishart, ks::tensor<1, ks::Float> q_33, ks::tensor<1, ks::Float> l_13) {
  ks::Tuple<ks::Float,ks::Integer> c$64 = wishart;
  auto gamma_28 = ks::get<0>(c$64);
  auto m_31 = ks::get<1>(c$64);
  ks::Integer c$0 = size(q_33);
  ks::Integer r_9 = c$0;
  ty$suffwdpass$add$aii c$1 = suffwdpass$add$aii($alloc, m_31, 1);
  ty$suffwdpass$add$aii c$62 = c$1;
  auto r_43 = ks::get<0>(c$62);
  auto b_f_44 = ks::get<1>(c$62);
  ty$suffwdpass$add$aii c$2 = suffwdpass$add$aii($alloc, r_9, r_43);
  ty$suffwdpass$add$aii c$61 = c$2;
  auto r_21 = ks::get<0>(c$61);
  auto b_f_22 = ks::get<1>(c$61);
  /* Lam */auto c$3 = [=](ks::allocator * $alloc, ks::Integer j) {
    ks::Float c$4 = index(j, q_33);
    ks::Float r_76 = c$4;
    ks::Float c$5 = mul$aff($alloc, Float(2.0), r_76);
    ty$suffwdpass$exp$af c$6 = suffwdpass$exp$af($alloc, c$5);
    ty$suffwdpass$exp$af c$8 = c$6;
    auto r_68 = ks::get<0>(c$8);
    auto b_f_69 = ks::get<1>(c$8);
    ks::tensor<1, ks::Float> c$7 = constVec($alloc, r_9, Float(0.0));
    return (ks::make_Tuple(r_68,ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(j,c$7),ks::make_Tuple(Float(2.0),r_76)),b_f_69)));
  };
  ks::tensor<1, ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>> c$10 = build<ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>($alloc, r_9, c$3);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>> c$11 = unzip($alloc, c$10);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>> c$60 = c$11;
  auto r_63 = ks::get<0>(c$60);
  auto ba = ks::get<1>(c$60);
  ks::Integer c$12 = size(l_13);
  ks::Integer r_74 = c$12;
  /* Lam */auto c$13 = [=](ks::allocator * $alloc, ks::Integer j_8) {
    ks::Float c$14 = index(j_8, l_13);
    ks::Float r_79 = c$14;
    ks::Float c$15 = mul$aff($alloc, r_79, r_79);
    ks::tensor<1, ks::Float> c$16 = constVec($alloc, r_74, Float(0.0));
    return (ks::make_Tuple(c$15,ks::make_Tuple(ks::make_Tuple(j_8,c$16),ks::make_Tuple(r_79,r_79))));
  };
  ks::tensor<1, ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>> c$18 = build<ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>($alloc, r_74, c$13);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>> c$19 = unzip($alloc, c$18);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>> c$58 = c$19;
  auto r_69 = ks::get<0>(c$58);
  auto ba_42 = ks::get<1>(c$58);
  ks::Float c$20 = sum($alloc, r_63);
  ks::Float c$21 = sum($alloc, r_69);
  ks::Float c$22 = add$aff($alloc, c$20, c$21);
  ks::Float r_45 = c$22;
  ty$suffwdpass$mul$aii c$23 = suffwdpass$mul$aii($alloc, r_21, r_9);
  ty$suffwdpass$mul$aii c$56 = c$23;
  auto r_91 = ks::get<0>(c$56);
  auto b_f_92 = ks::get<1>(c$56);
  ty$suffwdpass$to_float$ai c$24 = suffwdpass$to_float$ai($alloc, r_91);
  ty$suffwdpass$to_float$ai c$55 = c$24;
  auto r_87 = ks::get<0>(c$55);
  auto b_f_88 = ks::get<1>(c$55);
  ty$suffwdpass$log$af c$25 = suffwdpass$log$af($alloc, gamma_28);
  ty$suffwdpass$log$af c$54 = c$25;
  auto r_64 = ks::get<0>(c$54);
  auto b_f_64 = ks::get<1>(c$54);
  ty$suffwdpass$log$af c$26 = suffwdpass$log$af($alloc, Float(2.0));
  ty$suffwdpass$log$af c$53 = c$26;
  auto r_95 = ks::get<0>(c$53);
  auto b_f_96 = ks::get<1>(c$53);
  ks::Float c$27 = mul$aff($alloc, Float(0.5), r_95);
  ks::Float c$28 = sub$aff($alloc, r_64, c$27);
  ks::Float r_71 = c$28;
  ty$suffwdpass$to_float$ai c$29 = suffwdpass$to_float$ai($alloc, r_21);
  ty$suffwdpass$to_float$ai c$51 = c$29;
  auto r_73 = ks::get<0>(c$51);
  auto b_f_74 = ks::get<1>(c$51);
  ks::Float c$30 = mul$aff($alloc, Float(0.5), r_73);
  ty$suffwdpass$log_multigamma$afi c$31 = suffwdpass$log_multigamma$afi($alloc, c$30, r_9);
  ty$suffwdpass$log_multigamma$afi c$50 = c$31;
  auto r_78 = ks::get<0>(c$50);
  auto b_f_79 = ks::get<1>(c$50);
  ks::Float c$32 = mul$aff($alloc, gamma_28, gamma_28);
  ks::Float r_85 = c$32;
  ks::Float c$33 = mul$aff($alloc, Float(0.5), r_85);
  ks::Float r_88 = c$33;
  ty$suffwdpass$to_float$ai c$34 = suffwdpass$to_float$ai($alloc, m_31);
  ty$suffwdpass$to_float$ai c$47 = c$34;
  auto r_92 = ks::get<0>(c$47);
  auto b_f_93 = ks::get<1>(c$47);
  ty$suffwdpass$vec_total$aT1f c$35 = suffwdpass$vec_total$aT1f($alloc, q_33);
  ty$suffwdpass$vec_total$aT1f c$46 = c$35;
  auto r_94 = ks::get<0>(c$46);
  auto b_f_95 = ks::get<1>(c$46);
  ks::Float c$36 = mul$aff($alloc, r_88, r_45);
  ks::Float c$37 = mul$aff($alloc, r_92, r_94);
  ks::Float c$38 = sub$aff($alloc, c$36, c$37);
  ks::Float c$39 = mul$aff($alloc, r_87, r_71);
  ks::Float c$40 = sub$aff($alloc, c$39, r_78);
  ks::Float c$41 = sub$aff($alloc, c$38, c$40);
  ks::tensor<1, ks::Float> c$42 = constVec($alloc, r_9, Float(0.0));
  ks::Integer c$43 = size(r_63);
  ks::tensor<1, ks::Float> c$44 = constVec($alloc, r_74, Float(0.0));
  ks::Integer c$45 = size(r_69);
  return (ks::make_Tuple(c$41,ks::make_Tuple(c$42,ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(r_9,ks::make_Tuple(),ba),c$43),ks::make_Tuple(ks::make_Tuple(r_74,c$44,ba_42),c$45)),ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(b_f_64,ks::make_Tuple(b_f_96,ks::make_Tuple(Float(0.5),r_95))),ks::make_Tuple(r_87,r_71)),ks::make_Tuple(ks::make_Tuple(Float(0.5),r_73),b_f_79)),ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(gamma_28,gamma_28),ks::make_Tuple(Float(0.5),r_85)),ks::make_Tuple(r_88,r_45)),ks::make_Tuple(b_f_95,ks::make_Tuple(r_92,r_94))))))));
}

typedef ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<>>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Float>> ty$sufrevpass$wishart_term$a$dfi$bT1fT1f;
KS_DEF ty$sufrevpass$wishart_term$a$dfi$bT1fT1f sufrevpass$wishart_term$a$dfi$bT1fT1f(ks::allocator * $alloc, ks::Float dt_arg, ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>>> bog_arg) {
  ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>>> c$83 = bog_arg;
  auto b_rhs_9 = ks::get<0>(c$83);
  auto b_body_10 = ks::get<1>(c$83);
  ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>> c$82 = b_body_10;
  auto b_rhs_21 = ks::get<0>(c$82);
  auto b_body_22 = ks::get<1>(c$82);
  ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>> c$81 = b_body_22;
  auto b_rhs_25 = ks::get<0>(c$81);
  auto b_body_26 = ks::get<1>(c$81);
  ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>> c$80 = b_body_26;
  auto b_37 = ks::get<0>(c$80);
  auto b_39 = ks::get<1>(c$80);
  ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>> c$79 = b_37;
  auto be_41 = ks::get<0>(c$79);
  auto bf_42 = ks::get<1>(c$79);
  ks::Tuple<ks::Float,ks::Float> c$78 = bf_42;
  auto x = ks::get<0>(c$78);
  auto y = ks::get<1>(c$78);
  ks::Float c$0 = mul$aff($alloc, x, dt_arg);
  ks::Float d$t_47 = c$0;
  ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>> c$76 = be_41;
  auto be_48 = ks::get<0>(c$76);
  auto bf_49 = ks::get<1>(c$76);
  ks::Tuple<ks::Float,ks::Float> c$75 = bf_49;
  auto x_20 = ks::get<0>(c$75);
  auto y_21 = ks::get<1>(c$75);
  ks::Float c$1 = mul$aff($alloc, y, dt_arg);
  ks::Float c$2 = mul$aff($alloc, x_20, c$1);
  ks::Float d$t_54 = c$2;
  ks::Tuple<ks::Float,ks::Float> c$73 = be_48;
  auto x_23 = ks::get<0>(c$73);
  auto y_24 = ks::get<1>(c$73);
  ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>> c$72 = b_39;
  auto be_71 = ks::get<0>(c$72);
  auto bf_72 = ks::get<1>(c$72);
  ks::Tuple<ks::Float,ks::Float> c$71 = bf_72;
  auto x_27 = ks::get<0>(c$71);
  auto y_28 = ks::get<1>(c$71);
  ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>> c$70 = b_rhs_25;
  auto b_94 = ks::get<0>(c$70);
  auto b_96 = ks::get<1>(c$70);
  ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>> c$69 = b_94;
  auto be_98 = ks::get<0>(c$69);
  auto bf_99 = ks::get<1>(c$69);
  ks::Tuple<ks::Float,ks::Float> c$68 = bf_99;
  auto x_33 = ks::get<0>(c$68);
  auto y_34 = ks::get<1>(c$68);
  ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>> c$67 = be_98;
  auto b_120 = ks::get<0>(c$67);
  auto b_122 = ks::get<1>(c$67);
  ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>> c$66 = b_rhs_21;
  auto b_172 = ks::get<0>(c$66);
  auto b_174 = ks::get<1>(c$66);
  ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer> c$65 = b_172;
  auto be_176 = ks::get<0>(c$65);
  auto bf_177 = ks::get<1>(c$65);
  ks::tensor<1, ks::Float> c$3 = constVec($alloc, bf_177, d$t_47);
  ks::tensor<1, ks::Float> d$a_178 = c$3;
  ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>> c$63 = be_176;
  auto n = ks::get<0>(c$63);
  auto bn = ks::get<1>(c$63);
  auto ba = ks::get<2>(c$63);
  /* Lam */auto c$4 = [=](ks::allocator * $alloc, ks::Integer j) {
    ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float> c$5 = index(j, ba);
    ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float> c$21 = c$5;
    auto be_183 = ks::get<0>(c$21);
    auto bf_184 = ks::get<1>(c$21);
    ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>> c$20 = be_183;
    auto be_186 = ks::get<0>(c$20);
    auto bf_187 = ks::get<1>(c$20);
    ks::Tuple<ks::Float,ks::Float> c$19 = bf_187;
    auto x_52 = ks::get<0>(c$19);
    auto y_53 = ks::get<1>(c$19);
    ks::Float c$6 = index(j, d$a_178);
    ty$sufrevpass$exp$af c$7 = sufrevpass$exp$af($alloc, c$6, bf_184);
    ks::Float c$8 = mul$aff($alloc, x_52, c$7);
    ks::Float d$t_192 = c$8;
    ks::tensor<1, ks::Float> c$9 = ks::get<1>(be_186);
    ks::tensor<1, ks::Float> t$2965 = c$9;
    ks::Integer c$10 = size(t$2965);
    /* Lam */auto c$11 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
      ks::Integer c$13 = ks::get<0>(be_186);
      ks::Bool c$14 = eq(primDindex$i, c$13);
      ks::Float c$12;
      if (c$14) {
        c$12 = (d$t_192);
      } else {
        ks::Float c$15 = index(primDindex$i, t$2965);
        c$12 = (c$15);
      }
      return (c$12);
    };
    ks::tensor<1, ks::Float> c$16 = build<ks::Float>($alloc, c$10, c$11);
    return (ks::make_Tuple(c$16));
  };
  ks::Tuple<ks::tensor<1, ks::Float>> c$22 = sumbuild<ks::Tuple<ks::tensor<1, ks::Float>>>($alloc, n, c$4);
  ks::Tuple<ks::tensor<1, ks::Float>> c$62 = c$22;
  auto d$q_6 = ks::get<0>(c$62);
  ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer> c$61 = b_174;
  auto be_202 = ks::get<0>(c$61);
  auto bf_203 = ks::get<1>(c$61);
  ks::tensor<1, ks::Float> c$23 = constVec($alloc, bf_203, d$t_47);
  ks::tensor<1, ks::Float> d$a_204 = c$23;
  ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>> c$59 = be_202;
  auto n_207 = ks::get<0>(c$59);
  auto bn_209 = ks::get<1>(c$59);
  auto ba_208 = ks::get<2>(c$59);
  /* Lam */auto c$24 = [=](ks::allocator * $alloc, ks::Integer j_8) {
    ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>> c$25 = index(j_8, ba_208);
    ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>> c$43 = c$25;
    auto b_rhs_214 = ks::get<0>(c$43);
    auto b_body_215 = ks::get<1>(c$43);
    ks::Float c$26 = index(j_8, d$a_204);
    ks::Float d_dmul = c$26;
    ks::Tuple<ks::Float,ks::Float> c$41 = b_body_215;
    auto x_57 = ks::get<0>(c$41);
    auto y_58 = ks::get<1>(c$41);
    ks::Float c$27 = mul$aff($alloc, y_58, d_dmul);
    ks::Float d$t_222 = c$27;
    ks::Float c$28 = mul$aff($alloc, x_57, d_dmul);
    ks::Float d$t_224 = c$28;
    ks::tensor<1, ks::Float> c$29 = ks::get<1>(b_rhs_214);
    ks::tensor<1, ks::Float> t$2969 = c$29;
    ks::Integer c$30 = size(t$2969);
    /* Lam */auto c$31 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
      ks::Integer c$33 = ks::get<0>(b_rhs_214);
      ks::Bool c$34 = eq(primDindex$i, c$33);
      ks::Float c$32;
      if (c$34) {
        ks::Float c$35 = ts_add($alloc, d$t_222, d$t_224);
        c$32 = (c$35);
      } else {
        ks::Float c$36 = index(primDindex$i, t$2969);
        c$32 = (c$36);
      }
      return (c$32);
    };
    ks::tensor<1, ks::Float> c$37 = build<ks::Float>($alloc, c$30, c$31);
    return (ks::make_Tuple(c$37));
  };
  ks::Tuple<ks::tensor<1, ks::Float>> c$44 = sumbuild<ks::Tuple<ks::tensor<1, ks::Float>>>($alloc, n_207, c$24);
  ks::Tuple<ks::tensor<1, ks::Float>> c$58 = c$44;
  auto d$l_9 = ks::get<0>(c$58);
  ks::Float c$45 = neg$af($alloc, dt_arg);
  ks::Float t$2976 = c$45;
  ks::Float c$46 = mul$aff($alloc, y_24, d$t_54);
  ks::Float c$47 = mul$aff($alloc, x_23, d$t_54);
  ks::Float c$48 = ts_add($alloc, c$46, c$47);
  ks::Float c$49 = mul$aff($alloc, x_33, t$2976);
  ty$sufrevpass$log$af c$50 = sufrevpass$log$af($alloc, c$49, b_120);
  ks::Float c$51 = ts_add($alloc, c$48, c$50);
  ks::Float c$52 = mul$aff($alloc, x_27, t$2976);
  ty$sufrevpass$vec_total$aT1f c$53 = sufrevpass$vec_total$aT1f($alloc, c$52, be_71);
  ks::tensor<1, ks::Float> c$54 = ts_add($alloc, c$53, d$q_6);
  ks::tensor<1, ks::Float> c$55 = ts_add($alloc, c$54, b_rhs_9);
  ks::tensor<1, ks::Float> c$56 = ts_add($alloc, bn_209, d$l_9);
  return (ks::make_Tuple(ks::make_Tuple(c$51,ks::make_Tuple()),c$55,c$56));
}

typedef ks::Tuple<ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Tuple<>>> ty$sufrev$gmm_objective$aT1T1fT1fT1T1fT1T1fT1T1f$dfi$b;
KS_DEF ty$sufrev$gmm_objective$aT1T1fT1fT1T1fT1T1fT1T1f$dfi$b sufrev$gmm_objective$aT1T1fT1fT1T1fT1T1fT1T1f$dfi$b(ks::allocator * $alloc, ks::Tuple<ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Integer>> sarg, ks::Float dtarg) {
  ks::tensor<1, ks::tensor<1, ks::Float>> c$0 = ks::get<0>(sarg);
  ks::tensor<1, ks::tensor<1, ks::Float>> x_44 = c$0;
  ks::tensor<1, ks::Float> c$1 = ks::get<1>(sarg);
  ks::tensor<1, ks::Float> alphas_43 = c$1;
  ks::tensor<1, ks::tensor<1, ks::Float>> c$2 = ks::get<2>(sarg);
  ks::tensor<1, ks::tensor<1, ks::Float>> means_42 = c$2;
  ks::tensor<1, ks::tensor<1, ks::Float>> c$3 = ks::get<3>(sarg);
  ks::tensor<1, ks::tensor<1, ks::Float>> qs_41 = c$3;
  ks::tensor<1, ks::tensor<1, ks::Float>> c$4 = ks::get<4>(sarg);
  ks::tensor<1, ks::tensor<1, ks::Float>> ls_39 = c$4;
  ks::Tuple<ks::Float,ks::Integer> c$5 = ks::get<5>(sarg);
  ks::Tuple<ks::Float,ks::Integer> wishart = c$5;
  ks::Integer c$6 = size(x_44);
  ks::Integer r_10 = c$6;
  ks::Integer c$7 = size(alphas_43);
  ks::Integer r_16 = c$7;
  /* Lam */auto c$8 = [=](ks::allocator * $alloc, ks::Integer i) {
    /* Lam */auto c$9 = [=](ks::allocator * $alloc, ks::Integer c_21) {
      ks::Float c$10 = index(c_21, alphas_43);
      ks::tensor<1, ks::Float> c$11 = index(c_21, means_42);
      ks::tensor<1, ks::Float> c$12 = index(c_21, qs_41);
      ks::tensor<1, ks::Float> c$13 = index(c_21, ls_39);
      ks::tensor<1, ks::Float> c$14 = index(i, x_44);
      ty$suffwdpass$component_score$afT1fT1fT1fT1f c$15 = suffwdpass$component_score$afT1fT1fT1fT1f($alloc, c$10, c$11, c$12, c$13, c$14);
      ty$suffwdpass$component_score$afT1fT1fT1fT1f c$36 = c$15;
      auto r_70 = ks::get<0>(c$36);
      auto b_f_71 = ks::get<1>(c$36);
      ks::tensor<1, ks::Float> c$16 = constVec($alloc, r_16, Float(0.0));
      ks::Integer c$17 = size(means_42);
      ks::tensor<1, ks::Float> c$18 = index(0, means_42);
      ks::Integer c$19 = size(c$18);
      ks::tensor<1, ks::Float> c$20 = constVec($alloc, c$19, Float(0.0));
      ks::tensor<1, ks::tensor<1, ks::Float>> c$21 = constVec($alloc, c$17, c$20);
      ks::Integer c$22 = size(qs_41);
      ks::tensor<1, ks::Float> c$23 = index(0, qs_41);
      ks::Integer c$24 = size(c$23);
      ks::tensor<1, ks::Float> c$25 = constVec($alloc, c$24, Float(0.0));
      ks::tensor<1, ks::tensor<1, ks::Float>> c$26 = constVec($alloc, c$22, c$25);
      ks::Integer c$27 = size(ls_39);
      ks::tensor<1, ks::Float> c$28 = index(0, ls_39);
      ks::Integer c$29 = size(c$28);
      ks::tensor<1, ks::Float> c$30 = constVec($alloc, c$29, Float(0.0));
      ks::tensor<1, ks::tensor<1, ks::Float>> c$31 = constVec($alloc, c$27, c$30);
      ks::tensor<1, ks::Float> c$32 = index(0, x_44);
      ks::Integer c$33 = size(c$32);
      ks::tensor<1, ks::Float> c$34 = constVec($alloc, c$33, Float(0.0));
      ks::tensor<1, ks::tensor<1, ks::Float>> c$35 = constVec($alloc, r_10, c$34);
      return (ks::make_Tuple(r_70,ks::make_Tuple(ks::make_Tuple(c_21,c$16),ks::make_Tuple(ks::make_Tuple(c_21,c$21),ks::make_Tuple(ks::make_Tuple(c_21,c$26),ks::make_Tuple(ks::make_Tuple(c_21,c$31),ks::make_Tuple(ks::make_Tuple(i,c$35),b_f_71)))))));
    };
    ks::tensor<1, ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>> c$37 = build<ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>>($alloc, r_16, c$9);
    ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>> c$38 = unzip($alloc, c$37);
    ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>> c$41 = c$38;
    auto r_87 = ks::get<0>(c$41);
    auto ba_89 = ks::get<1>(c$41);
    ty$suffwdpass$log_sum_exp$aT1f c$39 = suffwdpass$log_sum_exp$aT1f($alloc, r_87);
    ty$suffwdpass$log_sum_exp$aT1f c$40 = c$39;
    auto r_84 = ks::get<0>(c$40);
    auto b_f_85 = ks::get<1>(c$40);
    return (ks::make_Tuple(r_84,ks::make_Tuple(ks::make_Tuple(r_16,ks::make_Tuple(),ba_89),b_f_85)));
  };
  ks::tensor<1, ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>,ks::Integer>,ks::Float>>>>> c$42 = build<ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>,ks::Integer>,ks::Float>>>>>($alloc, r_10, c$8);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>,ks::Integer>,ks::Float>>>>> c$43 = unzip($alloc, c$42);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>,ks::Integer>,ks::Float>>>>> c$171 = c$43;
  auto r_79 = ks::get<0>(c$171);
  auto ba = ks::get<1>(c$171);
  /* Lam */auto c$44 = [=](ks::allocator * $alloc, ks::Integer c_28) {
    ks::tensor<1, ks::Float> c$45 = index(c_28, qs_41);
    ks::tensor<1, ks::Float> c$46 = index(c_28, ls_39);
    ty$suffwdpass$wishart_term$a$dfi$bT1fT1f c$47 = suffwdpass$wishart_term$a$dfi$bT1fT1f($alloc, wishart, c$45, c$46);
    ty$suffwdpass$wishart_term$a$dfi$bT1fT1f c$58 = c$47;
    auto r_94 = ks::get<0>(c$58);
    auto b_f_95 = ks::get<1>(c$58);
    ks::Integer c$48 = size(qs_41);
    ks::tensor<1, ks::Float> c$49 = index(0, qs_41);
    ks::Integer c$50 = size(c$49);
    ks::tensor<1, ks::Float> c$51 = constVec($alloc, c$50, Float(0.0));
    ks::tensor<1, ks::tensor<1, ks::Float>> c$52 = constVec($alloc, c$48, c$51);
    ks::Integer c$53 = size(ls_39);
    ks::tensor<1, ks::Float> c$54 = index(0, ls_39);
    ks::Integer c$55 = size(c$54);
    ks::tensor<1, ks::Float> c$56 = constVec($alloc, c$55, Float(0.0));
    ks::tensor<1, ks::tensor<1, ks::Float>> c$57 = constVec($alloc, c$53, c$56);
    return (ks::make_Tuple(r_94,ks::make_Tuple(ks::make_Tuple(ks::make_Tuple(c_28,c$52),ks::make_Tuple(c_28,c$57)),b_f_95)));
  };
  ks::tensor<1, ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>>>>>> c$59 = build<ks::Tuple<ks::Float,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>($alloc, r_16, c$44);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>>>>>> c$60 = unzip($alloc, c$59);
  ks::Tuple<ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>>>>>> c$170 = c$60;
  auto r_89 = ks::get<0>(c$170);
  auto ba_51 = ks::get<1>(c$170);
  ty$suffwdpass$to_float$ai c$61 = suffwdpass$to_float$ai($alloc, r_10);
  ty$suffwdpass$to_float$ai c$169 = c$61;
  auto r_66 = ks::get<0>(c$169);
  auto b_f_67 = ks::get<1>(c$169);
  ty$suffwdpass$log_sum_exp$aT1f c$62 = suffwdpass$log_sum_exp$aT1f($alloc, alphas_43);
  ty$suffwdpass$log_sum_exp$aT1f c$168 = c$62;
  auto r_68 = ks::get<0>(c$168);
  auto b_f_69 = ks::get<1>(c$168);
  ks::Integer c$63 = size(r_89);
  ks::tensor<1, ks::Float> c$64 = constVec($alloc, c$63, dtarg);
  ks::tensor<1, ks::Float> d$a_102 = c$64;
  /* Lam */auto c$65 = [=](ks::allocator * $alloc, ks::Integer c_28) {
    ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>>>> c$66 = index(c_28, ba_51);
    ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Float>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Float>>>,ks::Integer>>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Float,ks::Float>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Float,ks::Float>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>>>> c$89 = c$66;
    auto be_107 = ks::get<0>(c$89);
    auto bf_108 = ks::get<1>(c$89);
    ks::Float c$67 = index(c_28, d$a_102);
    ty$sufrevpass$wishart_term$a$dfi$bT1fT1f c$68 = sufrevpass$wishart_term$a$dfi$bT1fT1f($alloc, c$67, bf_108);
    ty$sufrevpass$wishart_term$a$dfi$bT1fT1f c$88 = c$68;
    auto d$t_113 = ks::get<0>(c$88);
    auto d$t_115 = ks::get<1>(c$88);
    auto d$t_117 = ks::get<2>(c$88);
    ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>> c$87 = be_107;
    auto b_114 = ks::get<0>(c$87);
    auto b_116 = ks::get<1>(c$87);
    ks::tensor<1, ks::tensor<1, ks::Float>> c$69 = ks::get<1>(b_116);
    ks::tensor<1, ks::tensor<1, ks::Float>> t$3195 = c$69;
    ks::tensor<1, ks::tensor<1, ks::Float>> c$70 = ks::get<1>(b_114);
    ks::tensor<1, ks::tensor<1, ks::Float>> t$3199 = c$70;
    ks::Integer c$71 = size(t$3195);
    /* Lam */auto c$72 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
      ks::Integer c$74 = ks::get<0>(b_116);
      ks::Bool c$75 = eq(primDindex$i, c$74);
      ks::tensor<1, ks::Float> c$73;
      if (c$75) {
        c$73 = (d$t_117);
      } else {
        ks::tensor<1, ks::Float> c$76 = index(primDindex$i, t$3195);
        c$73 = (c$76);
      }
      return (c$73);
    };
    ks::tensor<1, ks::tensor<1, ks::Float>> c$77 = build<ks::tensor<1, ks::Float>>($alloc, c$71, c$72);
    ks::Integer c$78 = size(t$3199);
    /* Lam */auto c$79 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
      ks::Integer c$81 = ks::get<0>(b_114);
      ks::Bool c$82 = eq(primDindex$i, c$81);
      ks::tensor<1, ks::Float> c$80;
      if (c$82) {
        c$80 = (d$t_115);
      } else {
        ks::tensor<1, ks::Float> c$83 = index(primDindex$i, t$3199);
        c$80 = (c$83);
      }
      return (c$80);
    };
    ks::tensor<1, ks::tensor<1, ks::Float>> c$84 = build<ks::tensor<1, ks::Float>>($alloc, c$78, c$79);
    return (ks::make_Tuple(d$t_113,c$77,c$84));
  };
  ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>> c$90 = sumbuild<ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>>>($alloc, r_16, c$65);
  ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>> c$166 = c$90;
  auto d$wishart = ks::get<0>(c$166);
  auto d$ls_27 = ks::get<1>(c$166);
  auto d$qs_25 = ks::get<2>(c$166);
  ks::Integer c$91 = size(r_79);
  ks::tensor<1, ks::Float> c$92 = constVec($alloc, c$91, dtarg);
  ks::tensor<1, ks::Float> d$a_142 = c$92;
  /* Lam */auto c$93 = [=](ks::allocator * $alloc, ks::Integer i) {
    ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>,ks::Integer>,ks::Float>>> c$94 = index(i, ba);
    ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>>,ks::Integer>,ks::Float>>> c$156 = c$94;
    auto be_147 = ks::get<0>(c$156);
    auto bf_148 = ks::get<1>(c$156);
    ks::Float c$95 = index(i, d$a_142);
    ty$sufrevpass$log_sum_exp$aT1f c$96 = sufrevpass$log_sum_exp$aT1f($alloc, c$95, bf_148);
    ty$sufrevpass$log_sum_exp$aT1f d$a_149 = c$96;
    ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>>>> c$154 = be_147;
    auto n_150 = ks::get<0>(c$154);
    auto bn_152 = ks::get<1>(c$154);
    auto ba_151 = ks::get<2>(c$154);
    /* Lam */auto c$97 = [=](ks::allocator * $alloc, ks::Integer c_21) {
      ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>> c$98 = index(c_21, ba_151);
      ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>>> c$151 = c$98;
      auto b_rhs_156 = ks::get<0>(c$151);
      auto b_body_157 = ks::get<1>(c$151);
      ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>>> c$150 = b_body_157;
      auto b_rhs_160 = ks::get<0>(c$150);
      auto b_body_161 = ks::get<1>(c$150);
      ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>>> c$149 = b_body_161;
      auto b_rhs_164 = ks::get<0>(c$149);
      auto b_body_165 = ks::get<1>(c$149);
      ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>>> c$148 = b_body_165;
      auto b_rhs_166 = ks::get<0>(c$148);
      auto b_body_167 = ks::get<1>(c$148);
      ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>>,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Integer,ks::Tuple<>,ks::tensor<1, ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<ks::Tuple<>,ks::Tuple<>>,ks::Bool,ks::Tuple<ks::Integer,ks::Tuple<ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>,ks::Float>>,ks::Tuple<ks::tensor<1, ks::Float>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>>,ks::Tuple<ks::Integer,ks::tensor<1, ks::Float>>>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>,ks::Tuple<ks::Float,ks::Float>>>>,ks::Integer>>,ks::Tuple<ks::Float,ks::Float>>>> c$147 = b_body_167;
      auto be_168 = ks::get<0>(c$147);
      auto bf_169 = ks::get<1>(c$147);
      ks::Float c$99 = index(c_21, d$a_149);
      ty$sufrevpass$component_score$afT1fT1fT1fT1f c$100 = sufrevpass$component_score$afT1fT1fT1fT1f($alloc, c$99, bf_169);
      ty$sufrevpass$component_score$afT1fT1fT1fT1f c$146 = c$100;
      auto d$t_172 = ks::get<0>(c$146);
      auto d$t_174 = ks::get<1>(c$146);
      auto d$t_176 = ks::get<2>(c$146);
      auto d$t_178 = ks::get<3>(c$146);
      auto d$t_180 = ks::get<4>(c$146);
      ks::tensor<1, ks::Float> c$101 = ks::get<1>(b_rhs_156);
      ks::tensor<1, ks::Float> t$3207 = c$101;
      ks::tensor<1, ks::tensor<1, ks::Float>> c$102 = ks::get<1>(b_rhs_166);
      ks::tensor<1, ks::tensor<1, ks::Float>> t$3211 = c$102;
      ks::tensor<1, ks::tensor<1, ks::Float>> c$103 = ks::get<1>(b_rhs_160);
      ks::tensor<1, ks::tensor<1, ks::Float>> t$3215 = c$103;
      ks::tensor<1, ks::tensor<1, ks::Float>> c$104 = ks::get<1>(b_rhs_164);
      ks::tensor<1, ks::tensor<1, ks::Float>> t$3219 = c$104;
      ks::tensor<1, ks::tensor<1, ks::Float>> c$105 = ks::get<1>(be_168);
      ks::tensor<1, ks::tensor<1, ks::Float>> t$3223 = c$105;
      ks::Integer c$106 = size(t$3207);
      /* Lam */auto c$107 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
        ks::Integer c$109 = ks::get<0>(b_rhs_156);
        ks::Bool c$110 = eq(primDindex$i, c$109);
        ks::Float c$108;
        if (c$110) {
          c$108 = (d$t_172);
        } else {
          ks::Float c$111 = index(primDindex$i, t$3207);
          c$108 = (c$111);
        }
        return (c$108);
      };
      ks::tensor<1, ks::Float> c$112 = build<ks::Float>($alloc, c$106, c$107);
      ks::Integer c$113 = size(t$3211);
      /* Lam */auto c$114 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
        ks::Integer c$116 = ks::get<0>(b_rhs_166);
        ks::Bool c$117 = eq(primDindex$i, c$116);
        ks::tensor<1, ks::Float> c$115;
        if (c$117) {
          c$115 = (d$t_178);
        } else {
          ks::tensor<1, ks::Float> c$118 = index(primDindex$i, t$3211);
          c$115 = (c$118);
        }
        return (c$115);
      };
      ks::tensor<1, ks::tensor<1, ks::Float>> c$119 = build<ks::tensor<1, ks::Float>>($alloc, c$113, c$114);
      ks::Integer c$120 = size(t$3215);
      /* Lam */auto c$121 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
        ks::Integer c$123 = ks::get<0>(b_rhs_160);
        ks::Bool c$124 = eq(primDindex$i, c$123);
        ks::tensor<1, ks::Float> c$122;
        if (c$124) {
          c$122 = (d$t_174);
        } else {
          ks::tensor<1, ks::Float> c$125 = index(primDindex$i, t$3215);
          c$122 = (c$125);
        }
        return (c$122);
      };
      ks::tensor<1, ks::tensor<1, ks::Float>> c$126 = build<ks::tensor<1, ks::Float>>($alloc, c$120, c$121);
      ks::Integer c$127 = size(t$3219);
      /* Lam */auto c$128 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
        ks::Integer c$130 = ks::get<0>(b_rhs_164);
        ks::Bool c$131 = eq(primDindex$i, c$130);
        ks::tensor<1, ks::Float> c$129;
        if (c$131) {
          c$129 = (d$t_176);
        } else {
          ks::tensor<1, ks::Float> c$132 = index(primDindex$i, t$3219);
          c$129 = (c$132);
        }
        return (c$129);
      };
      ks::tensor<1, ks::tensor<1, ks::Float>> c$133 = build<ks::tensor<1, ks::Float>>($alloc, c$127, c$128);
      ks::Integer c$134 = size(t$3223);
      /* Lam */auto c$135 = [=](ks::allocator * $alloc, ks::Integer primDindex$i) {
        ks::Integer c$137 = ks::get<0>(be_168);
        ks::Bool c$138 = eq(primDindex$i, c$137);
        ks::tensor<1, ks::Float> c$136;
        if (c$138) {
          c$136 = (d$t_180);
        } else {
          ks::tensor<1, ks::Float> c$139 = index(primDindex$i, t$3223);
          c$136 = (c$139);
        }
        return (c$136);
      };
      ks::tensor<1, ks::tensor<1, ks::Float>> c$140 = build<ks::tensor<1, ks::Float>>($alloc, c$134, c$135);
      return (ks::make_Tuple(ks::make_Tuple(),c$112,c$119,c$126,c$133,c$140));
    };
    ks::Tuple<ks::Tuple<>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>> c$152 = sumbuild<ks::Tuple<ks::Tuple<>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>>>($alloc, n_150, c$97);
    ks::Tuple<ks::Tuple<>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>> c$153 = c$152;
    auto d$i = ks::get<0>(c$153);
    auto d$alphas_6 = ks::get<1>(c$153);
    auto d$ls = ks::get<2>(c$153);
    auto d$means_8 = ks::get<3>(c$153);
    auto d$qs = ks::get<4>(c$153);
    auto d$x_18 = ks::get<5>(c$153);
    return (ks::make_Tuple(ks::make_Tuple(),d$alphas_6,d$ls,d$means_8,d$qs,d$x_18));
  };
  ks::Tuple<ks::Tuple<>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>> c$157 = sumbuild<ks::Tuple<ks::Tuple<>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>>>($alloc, r_10, c$93);
  ks::Tuple<ks::Tuple<>,ks::tensor<1, ks::Float>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>,ks::tensor<1, ks::tensor<1, ks::Float>>> c$164 = c$157;
  auto d$k = ks::get<0>(c$164);
  auto d$alphas_6 = ks::get<1>(c$164);
  auto d$ls = ks::get<2>(c$164);
  auto d$means_8 = ks::get<3>(c$164);
  auto d$qs = ks::get<4>(c$164);
  auto d$x_18 = ks::get<5>(c$164);
  ks::Float c$158 = neg$af($alloc, dtarg);
  ks::Float c$159 = mul$aff($alloc, r_66, c$158);
  ty$sufrevpass$log_sum_exp$aT1f c$160 = sufrevpass$log_sum_exp$aT1f($alloc, c$159, b_f_69);
  ks::tensor<1, ks::Float> c$161 = ts_add($alloc, c$160, d$alphas_6);
  ks::tensor<1, ks::tensor<1, ks::Float>> c$162 = ts_add($alloc, d$qs_25, d$qs);
  ks::tensor<1, ks::tensor<1, ks::Float>> c$163 = ts_add($alloc, d$ls_27, d$ls);
  return (ks::make_Tuple(d$x_18,c$161,d$means_8,c$162,c$163,d$wishart));
}

}
#include "knossos.cpp"
