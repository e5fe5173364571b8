package dataset

import "syscall"

// mapPopulate reads the mapped file ahead, in one system call, instead of one page
// fault at a time.
const mapPopulate = syscall.MAP_POPULATE
