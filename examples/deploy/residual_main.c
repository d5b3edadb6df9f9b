// Runs the residual example model without the JIT: the model is compiled
// ahead of time by
//   mithril-run ../models/residual.mlir --shape=x:2x16 --emit=obj -o residual.o
//   mithril-run ../models/residual.mlir --shape=x:2x16 --emit=h -o residual.h
// and linked into this program:
//   cc residual_main.c residual.o -o residual -lm \
//      -L/usr/lib/llvm-22/lib -Wl,-rpath,/usr/lib/llvm-22/lib -lmlir_c_runner_utils
// It fills the inputs deterministically and prints the outputs, one per line.
#include <math.h>
#include <stdio.h>

#include "residual.h"

#define ROWS 2
#define IN 16
#define HID 32

static double x[ROWS][IN], w1[HID][IN], b1[HID], w2[IN][HID], b2[IN];
static double y[ROWS][IN], hidden[ROWS][HID];

#define VIEW2(T, a, r, c) \
  (T) { &a[0][0], &a[0][0], 0, {r, c}, {c, 1} }
#define VIEW1(T, a, n) \
  (T) { a, a, 0, {n}, {1} }

int main(void) {
  for (int i = 0; i < ROWS; ++i)
    for (int j = 0; j < IN; ++j)
      x[i][j] = sin(0.1 * (i * IN + j));
  for (int i = 0; i < HID; ++i) {
    b1[i] = 0.01 * i;
    for (int j = 0; j < IN; ++j)
      w1[i][j] = cos(0.05 * (i + 2 * j)) * 0.3;
  }
  for (int i = 0; i < IN; ++i) {
    b2[i] = -0.02 * i;
    for (int j = 0; j < HID; ++j)
      w2[i][j] = sin(0.07 * (3 * i + j)) * 0.3;
  }
  Residual_x_t in_x = VIEW2(Residual_x_t, x, ROWS, IN);
  Residual_fc1_weight_t in_w1 = VIEW2(Residual_fc1_weight_t, w1, HID, IN);
  Residual_fc2_weight_t in_w2 = VIEW2(Residual_fc2_weight_t, w2, IN, HID);
  Residual_fc1_bias_t in_b1 = VIEW1(Residual_fc1_bias_t, b1, HID);
  Residual_fc2_bias_t in_b2 = VIEW1(Residual_fc2_bias_t, b2, IN);
  Residual_y_t out_y = VIEW2(Residual_y_t, y, ROWS, IN);
  Residual_hidden_t out_hidden = VIEW2(Residual_hidden_t, hidden, ROWS, HID);
  _mlir_ciface_Residual(&in_x, &in_w1, &in_w2, &in_b1, &in_b2, &out_y, &out_hidden);
  for (int i = 0; i < ROWS; ++i)
    for (int j = 0; j < IN; ++j)
      printf("%.17g\n", y[i][j]);
  return 0;
}
