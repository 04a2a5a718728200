"""Django's Redis cache backend with one ``redis.Redis`` client per connection pool.

``django.core.cache.backends.redis`` builds a new ``redis.Redis`` for every get or set; its
constructor registers some 170 response callbacks, which costs more CPU than the round trip it
wraps. On the token path (SSO session, realm and key generations, authentication sessions) that
was the largest cost after the signature. The client is stateless over its pool, so one per pool
is enough; Django keeps one cache object per thread already.
"""
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class PooledClientRedisCacheClient(RedisCacheClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            if index not in self._pools:
                self._pools[index] = self._pool_class.from_url(self._servers[index], **self._pool_options)
            client = self._clients[index] = self._client(connection_pool=self._pools[index])
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = PooledClientRedisCacheClient
