"""What every node shares: message conversion, parameter declaration, bad-input bookkeeping and /diagnostics."""
