"""protocols/oaks"""
