"""protocols/seqmem"""
