"""systems"""
