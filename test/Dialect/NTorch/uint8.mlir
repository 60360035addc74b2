// RUN: neuron-opt %s -canonicalize -split-input-file | FileCheck %s

// Casts of ui8 splats fold reading the value unsigned: 200 stays 200 (as i8 it would be -56).
// CHECK-LABEL: func @fold_cast_from_uint8
// CHECK-DAG: ntorch.constant dense<2.000000e+02> : tensor<f32>
// CHECK-DAG: ntorch.constant dense<200> : tensor<i64>
// CHECK-DAG: ntorch.constant dense<true> : tensor<i1>
// CHECK-NOT: ntorch.cast
func.func @fold_cast_from_uint8() -> (tensor<f32>, tensor<i64>, tensor<i1>) {
  %c = ntorch.constant dense<200> : tensor<ui8>
  %f = ntorch.cast %c : tensor<ui8> -> tensor<f32>
  %l = ntorch.cast %c : tensor<ui8> -> tensor<i64>
  %b = ntorch.cast %c : tensor<ui8> -> tensor<i1>
  return %f, %l, %b : tensor<f32>, tensor<i64>, tensor<i1>
}

// -----

// Floats convert to ui8 as torch on x86-64 (and the simulator): the low byte of the int32
// truncation, 0 for NaN, infinities and values beyond int32.
// CHECK-LABEL: func @fold_cast_to_uint8
// CHECK-DAG: %[[A:.*]] = ntorch.constant dense<44> : tensor<ui8>
// CHECK-DAG: %[[B:.*]] = ntorch.constant dense<255> : tensor<ui8>
// CHECK-DAG: %[[C:.*]] = ntorch.constant dense<253> : tensor<ui8>
// CHECK-DAG: %[[Z:.*]] = ntorch.constant dense<0> : tensor<ui8>
// CHECK-NOT: ntorch.cast
// CHECK: return %[[A]], %[[B]], %[[C]], %[[Z]], %[[Z]]
func.func @fold_cast_to_uint8() -> (tensor<ui8>, tensor<ui8>, tensor<ui8>, tensor<ui8>, tensor<ui8>) {
  %a = ntorch.constant dense<300.0> : tensor<f32>
  %b = ntorch.constant dense<-1.0> : tensor<f32>
  %c = ntorch.constant dense<-3.7> : tensor<f32>
  %d = ntorch.constant dense<0x7FC00000> : tensor<f32>
  %e = ntorch.constant dense<3.0e+09> : tensor<f32>
  %0 = ntorch.cast %a : tensor<f32> -> tensor<ui8>
  %1 = ntorch.cast %b : tensor<f32> -> tensor<ui8>
  %2 = ntorch.cast %c : tensor<f32> -> tensor<ui8>
  %3 = ntorch.cast %d : tensor<f32> -> tensor<ui8>
  %4 = ntorch.cast %e : tensor<f32> -> tensor<ui8>
  return %0, %1, %2, %3, %4 : tensor<ui8>, tensor<ui8>, tensor<ui8>, tensor<ui8>, tensor<ui8>
}

// -----

// Between integers: the source's signedness decides the extension; narrowing wraps.
// CHECK-LABEL: func @fold_cast_between_integers
// CHECK-DAG: %[[U:.*]] = ntorch.constant dense<200> : tensor<ui8>
// CHECK-DAG: %[[S:.*]] = ntorch.constant dense<-56> : tensor<i64>
// CHECK-DAG: %[[W:.*]] = ntorch.constant dense<7> : tensor<ui8>
// CHECK: return %[[U]], %[[S]], %[[W]]
func.func @fold_cast_between_integers() -> (tensor<ui8>, tensor<i64>, tensor<ui8>) {
  %i8 = ntorch.constant dense<-56> : tensor<i8>
  %big = ntorch.constant dense<1099511627783> : tensor<i64>
  %0 = ntorch.cast %i8 : tensor<i8> -> tensor<ui8>
  %1 = ntorch.cast %i8 : tensor<i8> -> tensor<i64>
  %2 = ntorch.cast %big : tensor<i64> -> tensor<ui8>
  return %0, %1, %2 : tensor<ui8>, tensor<i64>, tensor<ui8>
}
