// tegula.h - everything a user of the C++ API needs.
#pragma once

#include "tegula/autotune.h"
#include "tegula/dtype.h"
#include "tegula/error.h"
#include "tegula/kernel.h"
#include "tegula/print.h"
#include "tegula/tl.h"
