// Everything an application needs: #include <pandora/pandora.h>, link
// Pandora::pandora (find_package(Pandora)).
#pragma once

#include "pandora/client.h"
#include "pandora/session.h"
#include "pandora/status.h"
#include "pandora/table.h"
#include "pandora/txn.h"
