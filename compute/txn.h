// The transaction API is public: defined once in include/pandora/txn.h.
#pragma once

#include "pandora/txn.h"
