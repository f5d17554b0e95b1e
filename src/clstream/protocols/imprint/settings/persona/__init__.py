"""ImprintBench's persona setting (SPECS §4): ``synthetic`` generates seeded conversations
whose persona facts change over time, ``local`` reads PersonaMem and HorizonBench exports.
"""
