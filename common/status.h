// Status, Errc and Result are part of the public API: defined once in
// include/pandora/status.h.
#pragma once

#include "pandora/status.h"
