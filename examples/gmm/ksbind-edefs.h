// Written by ksbind for ksc's C++: the edef'd functions of the module's .ks sources,
// declared as ksc calls them. Their definitions are the C++ files under 'cpp:'.
#pragma once

namespace ks {
}
